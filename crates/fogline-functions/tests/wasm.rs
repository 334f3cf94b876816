//! WebAssembly functions through a real broker: the ABI end to end, fuel and memory
//! limits failing one record without stopping the instance, bad modules refused at start.

mod common;

use common::{recv_n, Node, WAIT};
use fogline_broker::link::PublishOptions;
use fogline_functions::{FunctionError, FunctionKind, FunctionSpec, InstanceState};
use fogline_wire::Headers;

fn module(wat: &str) -> Vec<u8> {
    wat::parse_str(wat).unwrap()
}

fn tricks(fuel: u64, memory_bytes: u64) -> FunctionSpec {
    let mut spec = FunctionSpec::wasm("tricks", module(include_str!("wasm/tricks.wat")));
    if let FunctionKind::Wasm(w) = &mut spec.kind {
        w.fuel_per_record = fuel;
        w.memory_bytes = memory_bytes;
    }
    spec
}

#[test]
fn the_docs_example_is_the_tested_module() {
    let docs = include_str!("../src/lib.rs");
    let start = docs.find("//! ```text\n").unwrap() + "//! ```text\n".len();
    let end = start + docs[start..].find("//! ```\n").unwrap();
    let example: String = docs[start..end]
        .lines()
        .map(|l| format!("{}\n", l.strip_prefix("//! ").unwrap_or("")))
        .collect();
    let file = include_str!("wasm/upper.wat");
    assert_eq!(file.split_once('\n').unwrap().1, example);
}

#[tokio::test]
async fn upper_cases_text_end_to_end_keeping_headers() {
    let node = Node::new();
    let spec = FunctionSpec::wasm("upper", module(include_str!("wasm/upper.wat")));
    node.store().store(&spec).unwrap();
    let mut out = node.subscribe("text/upper");
    let id = node
        .runner
        .start("upper", "text/+/raw", "text/upper")
        .await
        .unwrap();
    node.publish("text/a/raw", &[b"hello", b"MiXed 123 \xc3\xa9"])
        .await;
    let big = "x".repeat(100_000);
    node.publish("text/b/raw", &[big.as_bytes()]).await;
    let got = recv_n(&mut out, 3).await;
    assert_eq!(got[..2], ["HELLO", "MIXED 123 \u{e9}"]);
    assert_eq!(got[2], big.to_uppercase(), "memory grew for a large record");
    let link = node.broker.link("sensor");
    let opts = PublishOptions::default();
    link.publish_with("text/c/raw", &[("unit", b"none")], b"abc", opts)
        .await
        .unwrap();
    let m = tokio::time::timeout(WAIT, out.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(&m.payload[..], b"ABC");
    let headers = Headers::parse(m.headers).unwrap();
    assert_eq!(headers.get("unit").as_deref(), Some(&b"none"[..]));
    let info = node.wait_for(id, |i| i.records_out == 4).await;
    assert_eq!((info.records_in, info.failures, info.kind), (4, 0, "wasm"));
}

#[tokio::test]
async fn doubles_numbers_and_a_trap_fails_only_its_record() {
    let node = Node::new();
    let spec = FunctionSpec::wasm("double", module(include_str!("wasm/double.wat")));
    node.store().store(&spec).unwrap();
    let mut out = node.subscribe("n/doubled");
    let id = node
        .runner
        .start("double", "n/in", "n/doubled")
        .await
        .unwrap();
    node.publish("n/in", &[b"21", b"-5", b"not a number", b"0", b"123456789"])
        .await;
    assert_eq!(recv_n(&mut out, 4).await, ["42", "-10", "0", "246913578"]);
    let info = node.wait_for(id, |i| i.failures == 1).await;
    assert_eq!((info.records_in, info.records_out), (5, 4));
    assert_eq!(info.state, InstanceState::Running);
    assert!(info.last_failure.unwrap().contains("unreachable"));
}

#[tokio::test]
async fn running_out_of_fuel_fails_the_record_and_resets_the_instance() {
    let node = Node::new();
    node.store().store(&tricks(50_000, 1 << 20)).unwrap();
    let mut out = node.subscribe("out");
    let id = node.runner.start("tricks", "in", "out").await.unwrap();
    node.publish("in", &[b"a", b"C", b"Loop", b"C", b"b"]).await;
    // The second 'C' is the fresh instance's first record.
    assert_eq!(recv_n(&mut out, 4).await, ["a", "2", "1", "b"]);
    let info = node.wait_for(id, |i| i.failures == 1).await;
    assert!(info.last_failure.unwrap().contains("out of fuel"));
    assert_eq!(info.state, InstanceState::Running);
}

#[tokio::test]
async fn the_memory_limit_fails_the_record_not_the_instance() {
    let node = Node::new();
    node.store().store(&tricks(1_000_000, 1 << 20)).unwrap();
    let mut out = node.subscribe("out");
    let id = node.runner.start("tricks", "in", "out").await.unwrap();
    node.publish("in", &[b"Grow", b"c"]).await;
    assert_eq!(recv_n(&mut out, 1).await, ["c"]);
    let info = node.wait_for(id, |i| i.failures == 1).await;
    assert!(info.last_failure.unwrap().contains("memory limit"));
    // A record larger than the memory limit cannot even be handed over.
    node.publish("in", &[&vec![b'x'; 2 << 20], b"d"]).await;
    assert_eq!(recv_n(&mut out, 1).await, ["d"]);
    node.wait_for(id, |i| i.failures == 2).await;
}

#[tokio::test]
async fn filtered_records_give_nothing_and_bad_ranges_fail() {
    let node = Node::new();
    node.store().store(&tricks(1_000_000, 1 << 20)).unwrap();
    let mut out = node.subscribe("out");
    let id = node.runner.start("tricks", "in", "out").await.unwrap();
    node.publish("in", &[b"Filtered", b"Out of range", b"", b"e"])
        .await;
    assert_eq!(recv_n(&mut out, 1).await, ["e"]);
    let info = node.wait_for(id, |i| i.records_in == 4).await;
    assert_eq!((info.records_out, info.failures), (1, 1));
    assert!(info.last_failure.unwrap().contains("outside memory"));
}

#[tokio::test]
async fn an_output_its_source_matches_does_not_feed_back() {
    let node = Node::new();
    node.store().store(&tricks(1_000_000, 1 << 20)).unwrap();
    let mut out = node.subscribe("t/out");
    let id = node.runner.start("tricks", "t/#", "t/out").await.unwrap();
    node.publish("t/in", &[b"once"]).await;
    assert_eq!(recv_n(&mut out, 1).await, ["once"]);
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    let info = node.runner.get(id).unwrap();
    assert_eq!((info.records_in, info.records_out), (1, 1));
    let info = node.runner.stop(id).await.unwrap();
    assert_eq!(info.state, InstanceState::Stopped);
    assert_eq!(node.store().running("tricks"), 0);
}

#[tokio::test]
async fn bad_modules_are_refused_at_start() {
    let node = Node::new();
    let cases = [
        ("garbage", b"\0asm but not really".to_vec(), "binary"),
        (
            "no_alloc",
            module(r#"(module (memory (export "memory") 1))"#),
            "alloc",
        ),
        (
            "imports",
            module(r#"(module (import "env" "log" (func)) (memory (export "memory") 1))"#),
            "env",
        ),
        (
            "too_big",
            module(r#"(module (memory (export "memory") 300))"#),
            "memory",
        ),
    ];
    for (name, bytes, mentions) in cases {
        node.store()
            .store(&FunctionSpec::wasm(name, bytes))
            .unwrap();
        let err = node.runner.start(name, "in", "out").await.unwrap_err();
        assert!(matches!(err, FunctionError::Wasm { .. }), "{name}: {err:?}");
        assert!(err.to_string().contains(mentions), "{name}: {err}");
        assert_eq!(node.store().running(name), 0);
    }
    assert!(node.runner.list().is_empty());
}
