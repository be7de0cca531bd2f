//! A barcode's text as a QR code image: SVG (one path, scales to any screen) or PNG
//! (one bit a pixel). Both are bounded: a barcode is at most `MAX_BARCODE_TEXT`
//! characters, a QR code of version 10 at most at error-correction level M, so the
//! largest PNG is 73 × 8 pixels square.

use boxoffice_domain::ticket::MAX_BARCODE_TEXT;
use boxoffice_engine::EngineError;
use qrcode::{Color, EcLevel, QrCode};

use crate::error::ApiError;

/// Light modules around the code, as the QR specification asks.
const QUIET_ZONE: usize = 4;
/// Pixels per module in the PNG: about 400 pixels for a typical ticket.
const PNG_SCALE: usize = 8;

/// The modules of `text`'s QR code (row by row, dark = true) and its width.
fn modules(text: &str) -> Result<(Vec<bool>, usize), ApiError> {
    if text.len() > MAX_BARCODE_TEXT {
        return Err(internal("a barcode longer than any ticket's"));
    }
    let code = QrCode::with_error_correction_level(text.as_bytes(), EcLevel::M)
        .map_err(|e| internal(&format!("QR encoding failed: {e}")))?;
    let width = code.width();
    let dark = (code.to_colors().into_iter())
        .map(|c| c == Color::Dark)
        .collect();
    Ok((dark, width))
}

fn internal(what: &str) -> ApiError {
    ApiError::from(EngineError::Internal(what.to_owned()))
}

/// The QR code as an SVG document, one unit per module.
pub fn svg(text: &str) -> Result<String, ApiError> {
    let (dark, width) = modules(text)?;
    let size = width + 2 * QUIET_ZONE;
    let mut path = String::with_capacity(dark.len() * 8);
    for (i, _) in dark.iter().enumerate().filter(|(_, d)| **d) {
        let (x, y) = (i % width + QUIET_ZONE, i / width + QUIET_ZONE);
        path.push_str(&format!("M{x},{y}h1v1h-1z"));
    }
    Ok(format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {size} {size}\" \
         shape-rendering=\"crispEdges\"><rect width=\"{size}\" height=\"{size}\" fill=\"#fff\"/>\
         <path fill=\"#000\" d=\"{path}\"/></svg>"
    ))
}

/// The QR code as a black-and-white PNG.
pub fn png(text: &str) -> Result<Vec<u8>, ApiError> {
    let (dark, width) = modules(text)?;
    let side = (width + 2 * QUIET_ZONE) * PNG_SCALE;
    let row_bytes = side.div_ceil(8);
    let mut pixels = vec![0xffu8; row_bytes * side];
    for (i, _) in dark.iter().enumerate().filter(|(_, d)| **d) {
        let (mx, my) = (i % width + QUIET_ZONE, i / width + QUIET_ZONE);
        for y in my * PNG_SCALE..(my + 1) * PNG_SCALE {
            for x in mx * PNG_SCALE..(mx + 1) * PNG_SCALE {
                pixels[y * row_bytes + x / 8] &= !(0x80 >> (x % 8));
            }
        }
    }
    let side = u32::try_from(side).map_err(|_| internal("QR image too large"))?;
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, side, side);
    encoder.set_color(png::ColorType::Grayscale);
    encoder.set_depth(png::BitDepth::One);
    let written = encoder
        .write_header()
        .and_then(|mut w| w.write_image_data(&pixels));
    written.map_err(|e| internal(&format!("PNG encoding failed: {e}")))?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_barcode_makes_a_bounded_png_and_svg() {
        let text = "A".repeat(MAX_BARCODE_TEXT);
        let png = png(&text).unwrap();
        assert_eq!(&png[1..4], b"PNG");
        assert!(png.len() < 64 * 1024, "{} bytes", png.len());
        assert!(svg(&text).unwrap().starts_with("<svg"));
    }

    #[test]
    fn a_text_longer_than_any_barcode_is_refused() {
        assert!(png(&"A".repeat(MAX_BARCODE_TEXT + 1)).is_err());
    }
}
