//! Feeds arbitrary bytes to the password file parser. Whatever parses must write back byte
//! for byte, and its users must be found; a user set on it must verify with its password
//! after another write and read. Nothing may panic.
#![no_main]

use fogline_auth::passwd::PasswordFile;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(mut file) = PasswordFile::parse(data) else {
        return;
    };
    assert_eq!(file.to_bytes(), data);
    let users: Vec<String> = file.users().map(str::to_owned).collect();
    assert_eq!(users.len(), file.len());
    for u in &users {
        assert!(file.get(u).is_some());
    }
    file.set("fuzz", b"pw", 1).unwrap();
    if let Some(u) = users.iter().find(|u| *u != "fuzz") {
        assert!(file.remove(u));
    }
    let back = PasswordFile::parse(&file.to_bytes()).unwrap();
    assert!(back.verify("fuzz", b"pw"));
    assert_eq!(back.len(), file.len());
});
