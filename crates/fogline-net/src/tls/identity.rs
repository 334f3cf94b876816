//! The subject common name (CN) of an X.509 certificate, which `use_identity_as_username`
//! makes the username. The certificate has passed webpki's verification by then, so its DER
//! is well formed; this walks only the path to the subject (RFC 5280 section 4.1) and
//! still returns `None`, never panics, on anything unexpected.

const SEQUENCE: u8 = 0x30;
const SET: u8 = 0x31;
const OID: u8 = 0x06;
const VERSION: u8 = 0xA0;
/// id-at-commonName, 2.5.4.3.
const CN: &[u8] = &[0x55, 0x04, 0x03];

/// The first CN of the subject of the DER certificate `cert`, if it has one in a string
/// type that holds UTF-8 (UTF8String, PrintableString, IA5String).
pub fn common_name(cert: &[u8]) -> Option<String> {
    let (tag, cert, _) = tlv(cert)?;
    let (tag2, mut tbs, _) = (tag == SEQUENCE).then(|| tlv(cert))??;
    if tag2 != SEQUENCE {
        return None;
    }
    let (tag, _, rest) = tlv(tbs)?;
    if tag == VERSION {
        tbs = rest;
    }
    // serialNumber, signature, issuer, validity.
    for _ in 0..4 {
        tbs = tlv(tbs)?.2;
    }
    let (tag, mut subject, _) = tlv(tbs)?;
    if tag != SEQUENCE {
        return None;
    }
    while !subject.is_empty() {
        let (tag, mut rdn, rest) = tlv(subject)?;
        subject = rest;
        if tag != SET {
            return None;
        }
        while !rdn.is_empty() {
            let (tag, atv, rest) = tlv(rdn)?;
            rdn = rest;
            if tag != SEQUENCE {
                return None;
            }
            let (tag, oid, value) = tlv(atv)?;
            if tag == OID && oid == CN {
                let (tag, text, _) = tlv(value)?;
                return matches!(tag, 0x0C | 0x13 | 0x16)
                    .then(|| std::str::from_utf8(text).ok().map(str::to_string))?;
            }
        }
    }
    None
}

/// Splits one DER element off `der`: its tag, its contents and what follows it.
fn tlv(der: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = der.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let n = usize::from(first & 0x7F);
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let len = rest[..n]
            .iter()
            .fold(0usize, |acc, &b| (acc << 8) | usize::from(b));
        (len, &rest[n..])
    };
    (rest.len() >= len).then(|| (tag, &rest[..len], &rest[len..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal certificate skeleton: the fields before the subject are empty elements.
    fn cert(subject: &[u8], with_version: bool) -> Vec<u8> {
        let mut tbs = Vec::new();
        if with_version {
            tbs.extend([VERSION, 3, 0x02, 1, 2]);
        }
        tbs.extend([0x02, 1, 1]); // serial
        tbs.extend([SEQUENCE, 0]); // signature algorithm
        tbs.extend([SEQUENCE, 0]); // issuer
        tbs.extend([SEQUENCE, 0]); // validity
        tbs.extend(subject);
        let tbs = wrap(SEQUENCE, &tbs);
        wrap(SEQUENCE, &tbs)
    }

    fn wrap(tag: u8, content: &[u8]) -> Vec<u8> {
        let mut out = vec![tag];
        if content.len() < 0x80 {
            out.push(content.len() as u8);
        } else {
            out.push(0x82);
            out.extend((content.len() as u16).to_be_bytes());
        }
        out.extend(content);
        out
    }

    fn attr(oid: &[u8], tag: u8, value: &[u8]) -> Vec<u8> {
        let mut atv = wrap(OID, oid);
        atv.extend(wrap(tag, value));
        wrap(SET, &wrap(SEQUENCE, &atv))
    }

    #[test]
    fn the_first_cn_of_the_subject_is_found() {
        let o = attr(&[0x55, 0x04, 0x0A], 0x0C, b"Acme");
        let cn = attr(CN, 0x13, b"sensor-7");
        let cn2 = attr(CN, 0x0C, b"other");
        let subject = wrap(SEQUENCE, &[o, cn, cn2].concat());
        assert_eq!(
            common_name(&cert(&subject, true)).as_deref(),
            Some("sensor-7")
        );
        assert_eq!(
            common_name(&cert(&subject, false)).as_deref(),
            Some("sensor-7")
        );
        // Long-form lengths.
        let long = "x".repeat(300);
        let subject = wrap(SEQUENCE, &attr(CN, 0x0C, long.as_bytes()));
        assert_eq!(common_name(&cert(&subject, true)), Some(long));
    }

    #[test]
    fn no_cn_or_damaged_der_is_none() {
        let o = wrap(SEQUENCE, &attr(&[0x55, 0x04, 0x0A], 0x0C, b"Acme"));
        assert_eq!(common_name(&cert(&o, true)), None);
        // A BMPString CN is not taken as UTF-8.
        let bmp = wrap(SEQUENCE, &attr(CN, 0x1E, &[0, b'a']));
        assert_eq!(common_name(&cert(&bmp, true)), None);
        let good = cert(&wrap(SEQUENCE, &attr(CN, 0x0C, b"abc")), true);
        for cut in 0..good.len() {
            assert_eq!(common_name(&good[..cut]), None, "cut at {cut}");
        }
        assert_eq!(common_name(&[0x30, 0x84, 0xFF, 0xFF, 0xFF, 0xFF]), None);
    }
}
