//! Process functions through a real broker: records on stdin, results from stdout, the
//! framing rule, stop killing the child, restarts with backoff, a missing command.

mod common;

use std::time::Duration;

use common::{pid_alive, recv_n, Node};
use fogline_functions::{FunctionError, FunctionKind, FunctionSpec, InstanceState};

const SHOUT: &str = "while read l; do echo \"$l!\"; done";

fn sh(name: &str, script: &str) -> FunctionSpec {
    FunctionSpec::process(name, "/bin/sh", ["-c", script])
}

fn with_max_restarts(mut spec: FunctionSpec, n: u32) -> FunctionSpec {
    if let FunctionKind::Process(p) = &mut spec.kind {
        p.max_restarts = n;
    }
    spec
}

#[tokio::test]
async fn each_record_is_a_line_in_and_each_line_out_a_result() {
    let node = Node::new();
    node.store().store(&sh("shout", SHOUT)).unwrap();
    let mut out = node.subscribe("out/shout");
    let id = node
        .runner
        .start("shout", "in/+", "out/shout")
        .await
        .unwrap();
    node.publish("in/a", &[b"hello", b"", b"two words"]).await;
    assert_eq!(recv_n(&mut out, 3).await, ["hello!", "!", "two words!"]);
    let info = node.wait_for(id, |i| i.records_out == 3).await;
    assert_eq!((info.records_in, info.failures, info.restarts), (3, 0, 0));
    assert_eq!(info.state, InstanceState::Running);
    assert_eq!((info.kind, info.source.as_str()), ("process", "in/+"));
    assert!(info.started_at > 0);
    assert_eq!(node.store().running("shout"), 1);
}

#[tokio::test]
async fn records_with_a_newline_or_too_long_are_refused() {
    let node = Node::new();
    let mut spec = sh("shout", SHOUT);
    if let FunctionKind::Process(p) = &mut spec.kind {
        p.max_line_bytes = 8;
    }
    node.store().store(&spec).unwrap();
    let mut out = node.subscribe("out");
    let id = node.runner.start("shout", "in", "out").await.unwrap();
    node.publish("in", &[b"a\nb", b"123456789", b"ok"]).await;
    assert_eq!(recv_n(&mut out, 1).await, ["ok!"]);
    let info = node.wait_for(id, |i| i.failures == 2).await;
    assert_eq!(info.records_in, 3);
    assert!(info.last_failure.unwrap().contains("max_line_bytes"));
}

#[tokio::test]
async fn stop_kills_and_reaps_the_child() {
    let node = Node::new();
    node.store().store(&sh("shout", SHOUT)).unwrap();
    let id = node.runner.start("shout", "in", "out").await.unwrap();
    let pid = node.wait_for(id, |i| i.pid.is_some()).await.pid.unwrap();
    assert!(pid_alive(pid));
    let info = node.runner.stop(id).await.unwrap();
    assert_eq!(info.state, InstanceState::Stopped);
    assert_eq!(info.pid, None);
    assert!(!pid_alive(pid), "child {pid} still there after stop");
    assert_eq!(node.store().running("shout"), 0);
}

#[tokio::test]
async fn stop_and_exit_kill_what_the_child_started() {
    let node = Node::new();
    let script = format!("sleep 300 & echo $!; {SHOUT}");
    node.store().store(&sh("bg", &script)).unwrap();
    node.store()
        .store(&with_max_restarts(sh("bg_exit", "sleep 300 & echo $!"), 0))
        .unwrap();
    let mut out = node.subscribe("out");
    let id = node.runner.start("bg", "in", "out").await.unwrap();
    let sleeper: u32 = recv_n(&mut out, 1).await[0].parse().unwrap();
    assert!(pid_alive(sleeper));
    node.runner.stop(id).await.unwrap();
    node.wait_for(id, |_| !pid_alive(sleeper)).await;
    // Exiting on its own: what it left behind goes too.
    let id = node.runner.start("bg_exit", "in", "out").await.unwrap();
    let sleeper: u32 = recv_n(&mut out, 1).await[0].parse().unwrap();
    node.wait_for(id, |i| matches!(i.state, InstanceState::Failed { .. }))
        .await;
    node.wait_for(id, |_| !pid_alive(sleeper)).await;
}

#[tokio::test]
async fn a_child_that_never_reads_gets_its_subscription_cut_off() {
    let node = Node::with(|c| {
        c.subscriptions.max_records = 8;
        c.subscriptions.block_timeout = Duration::from_millis(200);
    });
    let mut spec = sh("deaf", "sleep 60");
    if let FunctionKind::Process(p) = &mut spec.kind {
        p.queue = 2;
    }
    node.store().store(&spec).unwrap();
    let id = node.runner.start("deaf", "in", "out").await.unwrap();
    let pid = node.runner.get(id).unwrap().pid.unwrap();
    // Enough to fill the pipe (64 KiB), the queue and the broker's queue.
    let record = vec![b'x'; 1024];
    for _ in 0..200 {
        node.publish("in", &[&record]).await;
    }
    let info = node
        .wait_for(id, |i| matches!(i.state, InstanceState::Failed { .. }))
        .await;
    let InstanceState::Failed { reason } = info.state else {
        unreachable!()
    };
    assert!(reason.contains("SlowConsumer"), "{reason}");
    assert!(!pid_alive(pid));
}

#[tokio::test]
async fn a_small_queue_loses_nothing_when_the_child_keeps_up() {
    let node = Node::new();
    let mut spec = FunctionSpec::process("cat", "/bin/cat", [""; 0]);
    if let FunctionKind::Process(p) = &mut spec.kind {
        p.queue = 4;
    }
    node.store().store(&spec).unwrap();
    let mut out = node.subscribe("out");
    let id = node.runner.start("cat", "in", "out").await.unwrap();
    let sent: Vec<String> = (0..5000).map(|i| format!("record {i}")).collect();
    let refs: Vec<&[u8]> = sent.iter().map(|s| s.as_bytes()).collect();
    node.publish("in", &refs).await;
    assert_eq!(recv_n(&mut out, sent.len()).await, sent);
    let info = node.wait_for(id, |i| i.records_out == 5000).await;
    assert_eq!((info.failures, info.dropped), (0, 0));
}

#[tokio::test]
async fn the_node_stop_signal_stops_every_instance() {
    let node = Node::new();
    node.store().store(&sh("shout", SHOUT)).unwrap();
    let a = node.runner.start("shout", "in", "out").await.unwrap();
    let b = node.runner.start("shout", "in", "out2").await.unwrap();
    let pids: Vec<u32> = [a, b]
        .iter()
        .map(|id| node.runner.get(*id).unwrap().pid.unwrap())
        .collect();
    node.stop.send_replace(true);
    for id in [a, b] {
        node.wait_for(id, |i| i.state == InstanceState::Stopped)
            .await;
    }
    assert!(pids.iter().all(|p| !pid_alive(*p)));
}

#[tokio::test]
async fn a_child_that_exits_is_restarted_and_counted() {
    let node = Node::new();
    // Answers one record, then exits.
    node.store()
        .store(&sh("once", "read l; echo \"$l!\""))
        .unwrap();
    let mut out = node.subscribe("out");
    let id = node.runner.start("once", "in", "out").await.unwrap();
    let first = node.runner.get(id).unwrap().pid.unwrap();
    node.publish("in", &[b"one"]).await;
    assert_eq!(recv_n(&mut out, 1).await, ["one!"]);
    let info = node
        .wait_for(id, |i| i.restarts == 1 && i.pid.is_some())
        .await;
    assert_ne!(info.pid, Some(first));
    assert_eq!(info.state, InstanceState::Running);
    node.publish("in", &[b"two"]).await;
    assert_eq!(recv_n(&mut out, 1).await, ["two!"]);
}

#[tokio::test]
async fn too_many_restarts_in_a_row_fail_the_instance() {
    let node = Node::new();
    node.store()
        .store(&with_max_restarts(sh("crash", "echo dying >&2; exit 3"), 1))
        .unwrap();
    let id = node.runner.start("crash", "in", "out").await.unwrap();
    let info = node
        .wait_for(id, |i| matches!(i.state, InstanceState::Failed { .. }))
        .await;
    assert_eq!(info.restarts, 1);
    let InstanceState::Failed { reason } = info.state else {
        unreachable!()
    };
    assert!(reason.contains("exit status: 3"), "{reason}");
    assert_eq!(node.store().running("crash"), 0, "the lease is released");
}

#[tokio::test]
async fn a_missing_command_is_a_clear_error_at_start() {
    let node = Node::new();
    node.store()
        .store(&FunctionSpec::process("ghost", "/no/such/program", [""; 0]))
        .unwrap();
    let err = node.runner.start("ghost", "in", "out").await.unwrap_err();
    assert!(matches!(err, FunctionError::Spawn { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(
        msg.contains("/no/such/program") && msg.contains("No such file"),
        "{msg}"
    );
    assert!(node.runner.list().is_empty());
    assert_eq!(node.store().running("ghost"), 0);
}

#[tokio::test]
async fn bad_filters_topics_and_names_are_refused_at_start() {
    let node = Node::new();
    node.store().store(&sh("shout", SHOUT)).unwrap();
    let err = node
        .runner
        .start("shout", "in/#/x", "out")
        .await
        .unwrap_err();
    assert!(matches!(err, FunctionError::Broker { .. }), "{err:?}");
    let err = node.runner.start("shout", "in", "out/+").await.unwrap_err();
    assert!(matches!(err, FunctionError::Broker { .. }), "{err:?}");
    let err = node.runner.start("nobody", "in", "out").await.unwrap_err();
    assert!(matches!(err, FunctionError::NotFound(_)), "{err:?}");
    assert_eq!(node.store().running("shout"), 0);
}

#[tokio::test]
async fn delete_is_refused_while_running_unless_forced() {
    let node = Node::new();
    node.store().store(&sh("shout", SHOUT)).unwrap();
    let id = node.runner.start("shout", "in", "out").await.unwrap();
    let pid = node.runner.get(id).unwrap().pid.unwrap();
    let err = node.store().delete("shout", false).unwrap_err();
    assert!(
        matches!(err, FunctionError::Running { instances: 1, .. }),
        "{err:?}"
    );
    node.store().delete("shout", true).unwrap();
    let info = node
        .wait_for(id, |i| i.state == InstanceState::Stopped)
        .await;
    assert_eq!(info.pid, None);
    assert!(!pid_alive(pid));
    assert!(node.store().list().is_empty());
}
