//! The crypto provider. graviola uses AES, carry-less multiply and SHA-2 instructions
//! with no fallback, and asserts they exist on first use: checked here instead, so a CPU
//! without them (a Raspberry Pi 4) gets an error when TLS is configured, not a panic in a
//! connection's task.

use rustls::crypto::CryptoProvider;

use super::TlsError;

#[cfg(target_arch = "x86_64")]
pub(super) fn provider() -> Result<CryptoProvider, TlsError> {
    let missing: Vec<&str> = [
        ("aes", std::arch::is_x86_feature_detected!("aes")),
        ("ssse3", std::arch::is_x86_feature_detected!("ssse3")),
        ("avx", std::arch::is_x86_feature_detected!("avx")),
        ("avx2", std::arch::is_x86_feature_detected!("avx2")),
        ("adx", std::arch::is_x86_feature_detected!("adx")),
        ("bmi2", std::arch::is_x86_feature_detected!("bmi2")),
        (
            "pclmulqdq",
            std::arch::is_x86_feature_detected!("pclmulqdq"),
        ),
    ]
    .into_iter()
    .filter_map(|(name, present)| (!present).then_some(name))
    .collect();
    checked(&missing)
}

#[cfg(target_arch = "aarch64")]
pub(super) fn provider() -> Result<CryptoProvider, TlsError> {
    let missing: Vec<&str> = [
        ("neon", std::arch::is_aarch64_feature_detected!("neon")),
        ("aes", std::arch::is_aarch64_feature_detected!("aes")),
        ("pmull", std::arch::is_aarch64_feature_detected!("pmull")),
        ("sha2", std::arch::is_aarch64_feature_detected!("sha2")),
    ]
    .into_iter()
    .filter_map(|(name, present)| (!present).then_some(name))
    .collect();
    checked(&missing)
}

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn checked(missing: &[&str]) -> Result<CryptoProvider, TlsError> {
    if missing.is_empty() {
        Ok(rustls_graviola::default_provider())
    } else {
        Err(TlsError::Unsupported(format!(
            "this CPU lacks {} instructions, which the TLS crypto provider needs",
            missing.join(", ")
        )))
    }
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub(super) fn provider() -> Result<CryptoProvider, TlsError> {
    Err(TlsError::Unsupported(
        "TLS is built for x86_64 and aarch64 only".into(),
    ))
}
