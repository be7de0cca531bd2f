//! A certificate authority made on the spot, for tests that run real TLS endpoints
//! (PostgreSQL with `ssl=on`, Redis on its TLS port, an HTTPS stand-in for Stripe):
//! its certificate for the client's trust store and server certificates it signs for
//! `localhost` and `127.0.0.1`. rcgen on ring: nothing from OpenSSL or aws-lc.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};
use rustls::ServerConfig;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// The names every server certificate of the tests carries.
pub const SERVER_NAMES: [&str; 2] = ["localhost", "127.0.0.1"];

/// A CA: its certificate (PEM) and what it needs to sign server certificates.
pub struct TestCa {
    cert: rcgen::Certificate,
    key: KeyPair,
}

/// A server certificate signed by a [`TestCa`], with its private key.
pub struct ServerCert {
    pub cert_pem: String,
    pub key_pem: String,
    cert_der: CertificateDer<'static>,
    key_der: Vec<u8>,
}

/// Paths of a CA certificate, a server certificate and its key written to a directory.
pub struct TlsFiles {
    pub ca: PathBuf,
    pub cert: PathBuf,
    pub key: PathBuf,
}

impl TestCa {
    /// A new CA named `name`; a second one is a "wrong CA" for the first's servers.
    pub fn new(name: &str) -> TestCa {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        let key = KeyPair::generate().expect("a CA key");
        let cert = params.self_signed(&key).expect("a self-signed CA");
        TestCa { cert, key }
    }

    pub fn cert_pem(&self) -> String {
        self.cert.pem()
    }

    /// A server certificate for [`SERVER_NAMES`], signed by this CA.
    pub fn server_cert(&self) -> ServerCert {
        let names: Vec<String> = SERVER_NAMES.iter().map(|n| n.to_string()).collect();
        let mut params = CertificateParams::new(names).expect("server params");
        params
            .distinguished_name
            .push(DnType::CommonName, "localhost");
        let key = KeyPair::generate().expect("a server key");
        let cert = params
            .signed_by(&key, &self.cert, &self.key)
            .expect("a signed server certificate");
        ServerCert {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
            cert_der: cert.der().clone(),
            key_der: key.serialize_der(),
        }
    }

    /// Writes this CA's certificate and a fresh server certificate and key into `dir`
    /// (`ca.pem`, `server.pem`, `server.key`).
    pub fn write_files(&self, dir: &Path) -> TlsFiles {
        let server = self.server_cert();
        let files = TlsFiles {
            ca: dir.join("ca.pem"),
            cert: dir.join("server.pem"),
            key: dir.join("server.key"),
        };
        std::fs::write(&files.ca, self.cert_pem()).expect("writing ca.pem");
        std::fs::write(&files.cert, &server.cert_pem).expect("writing server.pem");
        std::fs::write(&files.key, &server.key_pem).expect("writing server.key");
        files
    }
}

impl ServerCert {
    /// A rustls server configuration presenting this certificate (ring provider).
    pub fn rustls_config(&self) -> Arc<ServerConfig> {
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(self.key_der.clone()));
        let config =
            ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
                .with_safe_default_protocol_versions()
                .expect("TLS versions")
                .with_no_client_auth()
                .with_single_cert(vec![self.cert_der.clone()], key)
                .expect("a server certificate rustls accepts");
        Arc::new(config)
    }
}
