//! Feeds arbitrary bytes to the ACL file parser: before the first 0xFF byte the file, after
//! it a query (`username\nclient id\ntopic`, an empty username being anonymous). Nothing
//! may panic, and an ACL that parses must answer the query for every access as the
//! rule-by-rule reference evaluator of the tests does, and as a per-connection view does.
#![no_main]

#[path = "../../tests/reference/mod.rs"]
mod reference;

use fogline_auth::acl::{Access, Acl};
use libfuzzer_sys::fuzz_target;
use std::sync::Arc;

fuzz_target!(|data: &[u8]| {
    let (file, query) = match data.iter().position(|b| *b == 0xff) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[][..]),
    };
    let Ok(acl) = Acl::parse_bytes(file) else {
        return;
    };
    let acl = Arc::new(acl);
    let query = String::from_utf8_lossy(query);
    let mut parts = query.splitn(3, '\n');
    let user = parts.next().filter(|u| !u.is_empty());
    let client = parts.next().unwrap_or("c");
    let topic = parts.next().unwrap_or("a/b");
    let view = acl.client(user, client);
    for access in [Access::Read, Access::Write, Access::Subscribe] {
        let want = reference::check(&acl, user, client, topic, access);
        assert_eq!(acl.check(user, client, topic, access), want, "{access:?}");
        assert_eq!(view.check(topic, access), want, "view {access:?}");
    }
});
