//! The function store: persistence across reopen, atomic writes, torn and orphaned files,
//! checksums, names.

use std::fs;

use fogline_functions::{FunctionError, FunctionKind, FunctionSpec, FunctionStore};

fn process_spec() -> FunctionSpec {
    FunctionSpec::process(
        "shout",
        "/bin/sh",
        ["-c", "while read l; do echo \"$l!\"; done"],
    )
    .with_attr("type", "text")
    .with_attr("stage", "post_processing")
}

fn files(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

#[test]
fn functions_persist_across_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let module = b"\0asm\x01\0\0\0 not checked until started".to_vec();
    {
        let store = FunctionStore::open(dir.path()).unwrap();
        store.store(&process_spec()).unwrap();
        store
            .store(&FunctionSpec::wasm("double", module.clone()).with_attr("type", "number"))
            .unwrap();
    }
    let store = FunctionStore::open(dir.path()).unwrap();
    assert_eq!(store.get("shout").unwrap(), process_spec());
    let double = store.get("double").unwrap();
    let FunctionKind::Wasm(w) = &double.kind else {
        panic!("{double:?}")
    };
    assert_eq!(w.module, module);
    assert_eq!(double.profile["type"], "number");
    let listed: Vec<_> = store
        .list()
        .into_iter()
        .map(|s| (s.spec.name, s.module_bytes, s.running))
        .collect();
    let len = module.len() as u64;
    assert_eq!(
        listed,
        [("double".into(), Some(len), 0), ("shout".into(), None, 0)]
    );
}

#[test]
fn torn_temp_files_and_orphan_modules_are_cleared_at_open() {
    let dir = tempfile::tempdir().unwrap();
    FunctionStore::open(dir.path())
        .unwrap()
        .store(&process_spec())
        .unwrap();
    // A crash mid-write: a half-written JSON and module, and a module no JSON names.
    fs::write(dir.path().join("shout.json.tmp"), b"{\"spec\": {\"na").unwrap();
    fs::write(dir.path().join("late.0badf00d.wasm.tmp"), b"\0as").unwrap();
    fs::write(dir.path().join("late.0badf00d.wasm"), b"\0asm").unwrap();
    let store = FunctionStore::open(dir.path()).unwrap();
    assert_eq!(store.get("shout").unwrap(), process_spec());
    assert!(matches!(store.get("late"), Err(FunctionError::NotFound(_))));
    assert_eq!(files(dir.path()), ["shout.json"]);
}

#[test]
fn replacing_a_module_removes_the_old_file() {
    let dir = tempfile::tempdir().unwrap();
    let store = FunctionStore::open(dir.path()).unwrap();
    store
        .store(&FunctionSpec::wasm("f", b"one".to_vec()))
        .unwrap();
    store
        .store(&FunctionSpec::wasm("f", b"two".to_vec()))
        .unwrap();
    let wasm: Vec<_> = files(dir.path())
        .into_iter()
        .filter(|f| f.ends_with(".wasm"))
        .collect();
    assert_eq!(wasm.len(), 1, "{wasm:?}");
    let FunctionKind::Wasm(w) = store.get("f").unwrap().kind else {
        panic!()
    };
    assert_eq!(w.module, b"two");
}

#[test]
fn a_damaged_module_fails_its_checksum() {
    let dir = tempfile::tempdir().unwrap();
    let store = FunctionStore::open(dir.path()).unwrap();
    store
        .store(&FunctionSpec::wasm("f", b"module".to_vec()))
        .unwrap();
    let file = files(dir.path())
        .into_iter()
        .find(|f| f.ends_with(".wasm"))
        .unwrap();
    fs::write(dir.path().join(file), b"modul3").unwrap();
    let err = store.get("f").unwrap_err();
    assert!(matches!(err, FunctionError::Corrupt { .. }), "{err}");
}

#[test]
fn an_unparsable_json_is_skipped_and_kept() {
    let dir = tempfile::tempdir().unwrap();
    let store = FunctionStore::open(dir.path()).unwrap();
    store
        .store(&FunctionSpec::wasm("f", b"module".to_vec()))
        .unwrap();
    store.store(&process_spec()).unwrap();
    fs::write(dir.path().join("f.json"), b"{ not json").unwrap();
    let store = FunctionStore::open(dir.path()).unwrap();
    let names: Vec<_> = store.list().into_iter().map(|s| s.spec.name).collect();
    assert_eq!(names, ["shout"]);
    // Left for the operator, module included.
    assert_eq!(files(dir.path()).len(), 3);
}

#[test]
fn names_and_specs_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    let store = FunctionStore::open(dir.path()).unwrap();
    for name in ["", "../etc", "a.b", "with space"] {
        let err = store.store(&FunctionSpec::process(name, "/bin/true", [""; 0]));
        assert!(matches!(err, Err(FunctionError::InvalidName(_))), "{name}");
    }
    let err = store.store(&FunctionSpec::wasm("empty", Vec::new()));
    assert!(matches!(err, Err(FunctionError::InvalidSpec { .. })));
    assert!(matches!(
        store.delete("nothing", false),
        Err(FunctionError::NotFound(_))
    ));
    assert_eq!(files(dir.path()), [""; 0]);
}

#[test]
fn delete_removes_the_files() {
    let dir = tempfile::tempdir().unwrap();
    let store = FunctionStore::open(dir.path()).unwrap();
    store
        .store(&FunctionSpec::wasm("f", b"module".to_vec()))
        .unwrap();
    store.delete("f", false).unwrap();
    assert_eq!(files(dir.path()), [""; 0]);
    let store = FunctionStore::open(dir.path()).unwrap();
    assert!(store.list().is_empty());
}

#[test]
fn functions_are_found_by_profile() {
    let dir = tempfile::tempdir().unwrap();
    let store = FunctionStore::open(dir.path()).unwrap();
    let lidar = FunctionSpec::process("lidar_post", "/bin/cat", [""; 0])
        .with_attr("sensor", "LiDAR")
        .with_attr("stage", "post_processing");
    let camera = FunctionSpec::process("camera_post", "/bin/cat", [""; 0])
        .with_attr("sensor", "camera")
        .with_attr("stage", "post_processing");
    store.store(&lidar).unwrap();
    store.store(&camera).unwrap();
    let find = |pairs: &[(&str, &str)]| {
        let wanted = pairs
            .iter()
            .map(|(a, v)| (a.to_string(), v.to_string()))
            .collect();
        store.find(&wanted)
    };
    assert_eq!(find(&[("sensor", "Li*")]), ["lidar_post"]);
    assert_eq!(
        find(&[("sensor", "LiDAR"), ("stage", "post_processing")]),
        ["lidar_post"]
    );
    assert_eq!(find(&[("stage", "")]), ["camera_post", "lidar_post"]);
    assert_eq!(find(&[("stage", "post*"), ("sensor", "radar")]), [""; 0]);
    assert_eq!(find(&[("owner", "")]), [""; 0]);
    assert_eq!(find(&[]).len(), 2);
}
