//! TLS for `rediss://` URLs: rustls on the ring provider, trusting the system's
//! certificate store and, when configured, the CA certificates of one more PEM file
//! (a Redis behind a private CA). The redis crate takes extra roots only as a
//! replacement for the system's, so both are handed to it together.

use std::path::Path;

use base64::Engine;
use boxoffice_engine::ports::StoreError;
use redis::TlsCertificates;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

/// Makes ring the process's rustls provider unless one is installed already, so no
/// TLS connection can fail (or panic) choosing between providers.
pub fn install_ring_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// The trust roots for a Redis whose CA is in `ca_file`: the system's store plus the
/// file's certificates.
pub(crate) fn certificates(ca_file: &Path) -> Result<TlsCertificates, StoreError> {
    let shown = ca_file.display();
    let extra = std::fs::read(ca_file)
        .map_err(|e| StoreError(format!("reading redis_ca_file {shown}: {e}")))?;
    let parsed: Result<Vec<_>, _> = CertificateDer::pem_slice_iter(&extra).collect();
    match parsed {
        Ok(certs) if !certs.is_empty() => {}
        Ok(_) => {
            return Err(StoreError(format!(
                "redis_ca_file {shown} holds no certificate"
            )));
        }
        Err(e) => return Err(StoreError(format!("redis_ca_file {shown}: {e}"))),
    }
    let mut roots = system_roots_pem();
    roots.extend_from_slice(&extra);
    Ok(TlsCertificates {
        client_tls: None,
        root_cert: Some(roots),
    })
}

/// The system's trusted certificates as PEM; unreadable entries are skipped, as the
/// redis crate itself does when it loads them.
fn system_roots_pem() -> Vec<u8> {
    let mut pem = String::new();
    for cert in rustls_native_certs::load_native_certs().certs {
        let body = base64::engine::general_purpose::STANDARD.encode(cert.as_ref());
        pem.push_str("-----BEGIN CERTIFICATE-----\n");
        for line in body.as_bytes().chunks(64) {
            pem.push_str(&String::from_utf8_lossy(line));
            pem.push('\n');
        }
        pem.push_str("-----END CERTIFICATE-----\n");
    }
    pem.into_bytes()
}
