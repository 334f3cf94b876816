//! The monitor driven by hand: lock step, free running, repair.

use super::*;

fn cfg(id: usize, lockstep: bool) -> GmConfig {
    GmConfig {
        name: "lab".into(),
        id,
        nodes: 2,
        zone: "ball".into(),
        lockstep,
        ..GmConfig::default()
    }
}

fn reading(epoch: u64, t: f64) -> Vec<u8> {
    json(&Reading {
        epoch,
        temperature: t,
        humidity: 35.0,
    })
}

fn of(out: &[Publish], kind: &str) -> Vec<serde_json::Value> {
    out.iter()
        .filter(|p| p.0 == kind)
        .map(|p| serde_json::from_slice(&p.1).unwrap())
        .collect()
}

#[test]
fn lock_step_waits_for_its_reading_and_for_the_senders() {
    let mut m = Monitor::new(&cfg(0, true)).unwrap();
    let tick0 = json(&Tick {
        epoch: 0,
        round: 0,
        senders: vec![],
    });
    assert!(m.on_tick(&tick0).unwrap().is_empty(), "no reading yet");
    let out = m.on_reading(&reading(0, 18.0)).unwrap();
    assert_eq!(
        of(&out, "update").len(),
        1,
        "the first reading is always sent"
    );
    let tick1 = json(&Tick {
        epoch: 0,
        round: 1,
        senders: vec![0, 1],
    });
    assert!(
        m.on_tick(&tick1).unwrap().is_empty(),
        "node 1's update is missing"
    );
    let u = json(&Update {
        epoch: 0,
        round: 0,
        origin: 1,
        seq: 1,
        vector: vec![300, 90_000],
        known: vec![],
        trend: None,
    });
    let out = m.on_update(&u).unwrap();
    let status = &of(&out, "status")[0];
    assert_eq!(status["round"], 1);
    // readings 18 and 23 C: variance 6.25 > 2
    assert_eq!(status["side"], "Above");
    assert_eq!(of(&out, "alarm")[0]["side"], "Above");
}

#[test]
fn free_mode_acts_at_once() {
    let mut a = Monitor::new(&cfg(0, false)).unwrap();
    let out = a.on_reading(&reading(0, 20.0)).unwrap();
    assert_eq!(of(&out, "update").len(), 1);
    let refused = Monitor::new(&GmConfig {
        zone: "cube".into(),
        ..cfg(0, false)
    })
    .err()
    .expect("an unknown zone is refused");
    assert!(
        refused
            .to_string()
            .contains("\"cube\": ball, box, convex, band"),
        "{refused}"
    );
    assert!(Monitor::new(&GmConfig {
        id: 2,
        ..cfg(0, false)
    })
    .is_err());
}

/// Three monitors wired by hand: node 2 loses node 1's first update; node 0's next
/// update tells it so, and its pull brings the update back.
#[test]
fn a_pull_brings_back_a_lost_update() {
    let mut m: Vec<Monitor> = (0..3)
        .map(|id| {
            Monitor::new(&GmConfig {
                name: "lab".into(),
                id,
                nodes: 3,
                repair: true,
                ..GmConfig::default()
            })
            .unwrap()
        })
        .collect();
    let reading = |epoch, t| {
        serde_json::to_vec(&Reading {
            epoch,
            temperature: t,
            humidity: 35.0,
        })
        .unwrap()
    };
    let updates = |out: &[Publish]| -> Vec<Vec<u8>> {
        out.iter()
            .filter(|p| p.0 == "update")
            .map(|p| p.1.clone())
            .collect()
    };
    let mut first = Vec::new();
    for (i, mon) in m.iter_mut().enumerate() {
        first.push(updates(&mon.on_reading(&reading(0, 20.0)).unwrap()).remove(0));
        let _ = i;
    }
    // everyone hears everyone, except that node 2 misses node 1's update
    for (to, mon) in m.iter_mut().enumerate() {
        for (from, u) in first.iter().enumerate() {
            if from != to && !(to == 2 && from == 1) {
                mon.on_update(u).unwrap();
            }
        }
    }
    let jump = updates(&m[0].on_reading(&reading(1, 25.0)).unwrap());
    assert_eq!(jump.len(), 1);
    m[2].on_update(&jump[0]).unwrap();
    let out = m[2].on_reading(&reading(2, 20.0)).unwrap();
    let pull = out.iter().find(|p| p.0 == "pull").expect("node 2 pulls");
    let answer = updates(&m[0].on_pull(&pull.1).unwrap());
    assert_eq!(answer.len(), 1);
    let out = m[2].on_update(&answer[0]).unwrap();
    let status: Status = serde_json::from_slice(&out.last().unwrap().1).unwrap();
    assert_eq!(status.seqs, vec![2, 1, 1]);
}

/// The coordinator protocol through its JSON envelopes: three nodes and a coordinator, wired
/// by hand, follow the variance across the threshold and back.
#[test]
fn the_coordinator_protocol_runs_on_envelopes() {
    let n = 3;
    let mut parts: Vec<Service> = (0..=n)
        .map(|id| {
            Service::new(&GmConfig {
                name: "lab".into(),
                id,
                nodes: n,
                protocol: "coordinator".into(),
                ..GmConfig::default()
            })
            .unwrap()
        })
        .collect();
    for (epoch, temps, want) in [
        (0u64, [20.0, 20.0, 20.0], Side::Below),
        (1, [18.0, 20.0, 22.0], Side::Above),
        (2, [20.0, 20.1, 20.0], Side::Below),
    ] {
        let mut queue: std::collections::VecDeque<(usize, Vec<u8>)> = Default::default();
        let mut alarms = Vec::new();
        for (id, t) in temps.iter().enumerate() {
            let r = json(&Reading {
                epoch,
                temperature: *t,
                humidity: 35.0,
            });
            for p in parts[id].on_reading(&r).unwrap() {
                match p.0 {
                    "msg" => queue.push_back((id, p.1)),
                    "alarm" => alarms.push((id, p.1)),
                    _ => {}
                }
            }
        }
        while let Some((from, payload)) = queue.pop_front() {
            for (to, part) in parts.iter_mut().enumerate() {
                if to != from {
                    for p in part.on_peer("msg", &payload).unwrap() {
                        match p.0 {
                            "msg" => queue.push_back((to, p.1)),
                            "alarm" => alarms.push((to, p.1)),
                            _ => {}
                        }
                    }
                }
            }
        }
        let last: Vec<Alarm> = alarms
            .iter()
            .filter(|a| a.0 == n)
            .map(|a| serde_json::from_slice(&a.1).unwrap())
            .collect();
        assert_eq!(last.last().map(|a| a.side), Some(want), "epoch {epoch}");
    }
    assert!(Service::new(&GmConfig {
        protocol: "coordinator".into(),
        lockstep: true,
        nodes: 2,
        ..GmConfig::default()
    })
    .is_err());
}

/// Prediction through the records: trends travel in the update records, so every monitor
/// holds the same predicted estimate and decides as the oracle does at every epoch; and the
/// monitors send the same updates as the simulator's `predict/convex` nodes.
#[test]
fn predicted_trends_travel_in_update_records() {
    let n = 6;
    let thesis = crate::Function::thesis(crate::Kind::Variance);
    let vectors = crate::data::parametric::parametric(n, 22, 900, 3).vectors(&thesis);
    // a threshold the variance of these six crosses: its median, in whole 0.01 C^2
    let mut values = crate::oracle::values(&thesis, &vectors);
    values.sort_by(f64::total_cmp);
    let threshold = (values[values.len() / 2] * 100.0).round() / 100.0;
    let f = crate::Function::new(crate::Kind::Variance, threshold, [20.0, 35.0], 0.01).unwrap();
    let truth = crate::oracle::sides(&f, &vectors);
    assert!(
        truth.windows(2).any(|w| w[0] != w[1]),
        "the threshold is crossed"
    );
    let mut monitors: Vec<Monitor> = (0..n)
        .map(|id| {
            Monitor::new(&GmConfig {
                name: "lab".into(),
                id,
                nodes: n,
                threshold: Some(threshold),
                predict: true,
                ..GmConfig::default()
            })
            .unwrap()
        })
        .collect();
    let mut sim_nodes: Vec<BroadcastNode> = (0..n)
        .map(|id| {
            BroadcastNode::new(id, n, f.clone(), Policy::Zone(crate::Zone::Convex))
                .with_prediction()
        })
        .collect();
    let mut with_slope = 0;
    for (epoch, ep) in vectors.iter().enumerate() {
        // the records path and the state machines, side by side, delivering every update to
        // every other node at once, in the order sent
        let mut queue: std::collections::VecDeque<Vec<u8>> = Default::default();
        let mut sim_queue: std::collections::VecDeque<crate::proto::Msg> = Default::default();
        for id in 0..n {
            let out = monitors[id]
                .on_reading(&reading(epoch as u64, 20.0 + 0.01 * ep[id][0] as f64))
                .unwrap();
            queue.extend(out.into_iter().filter(|p| p.0 == "update").map(|p| p.1));
            let mut o = Vec::new();
            sim_nodes[id].on_reading(epoch as u64, &ep[id], &mut o);
            sim_queue.extend(o.into_iter().map(|o| o.msg));
        }
        while let Some(u) = queue.pop_front() {
            let rec: Update = serde_json::from_slice(&u).unwrap();
            let sim_msg = sim_queue.pop_front().expect("the simulator sent as many");
            assert_eq!(msg(&rec), sim_msg, "epoch {epoch}");
            let trend = rec.trend.expect("an update carries its trend");
            with_slope += usize::from(trend.slope != [0, 0]);
            for id in (0..n).filter(|&id| id != rec.origin) {
                let out = monitors[id].on_update(&u).unwrap();
                queue.extend(out.into_iter().filter(|p| p.0 == "update").map(|p| p.1));
                let mut o = Vec::new();
                sim_nodes[id].on_message(rec.origin, &sim_msg, &mut o);
                sim_queue.extend(o.into_iter().map(|o| o.msg));
            }
        }
        assert!(sim_queue.is_empty(), "epoch {epoch}");
        let sums: Vec<_> = monitors.iter().map(|m| m.node.view_sum()).collect();
        assert!(
            sums.iter().all(|s| *s == sums[0]),
            "epoch {epoch}: {sums:?}"
        );
        for m in &monitors {
            assert_eq!(m.node.belief(), Some(truth[epoch]), "epoch {epoch}");
        }
    }
    assert!(with_slope > 0, "some trends are not flat");
}
