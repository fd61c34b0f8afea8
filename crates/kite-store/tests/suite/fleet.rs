//! The fleet's contract (keys, teams, the ledger, stored responses, owners), as tests any
//! backend must pass.

use kite_store::fleet::{
    Budget, By, FleetLimits, KeyRecord, LedgerRow, Period, StoredResponse, TeamRecord, UsageQuery,
};
use kite_store::{Fleet, Store, StoreError};

fn key(id: &str, name: &str, digest: &str) -> KeyRecord {
    KeyRecord {
        id: id.into(),
        name: name.into(),
        digest: digest.into(),
        hint: "kite_...abcd".into(),
        team: Some("research".into()),
        limits: FleetLimits {
            rpm: Some(10),
            tpm: None,
            max_parallel: Some(2),
            max_body: Some(1 << 20),
            max_stored: None,
        },
        budget: Some(Budget {
            usd: 5.0,
            period: Period::Month,
        }),
        models: vec!["fast".into()],
        expires_ms: None,
        created_ms: 1,
        revoked_ms: None,
    }
}

/// Keys and teams: saved, listed, refused when their name is taken, and every change moves
/// the version.
pub(crate) async fn keys_and_teams(store: &dyn Fleet) {
    let v0 = store.version().await.unwrap();
    store.save_key(key("key_a", "alice", "d1")).await.unwrap();
    let v1 = store.version().await.unwrap();
    assert!(v1 > v0);
    let taken = store
        .save_key(key("key_b", "alice", "d2"))
        .await
        .unwrap_err();
    assert!(
        matches!(taken, StoreError::Exists(ref m) if m.contains("alice")),
        "{taken}"
    );
    let same_secret = store.save_key(key("key_b", "bob", "d1")).await.unwrap_err();
    assert!(
        matches!(same_secret, StoreError::Exists(_)),
        "{same_secret}"
    );
    assert_eq!(
        store.version().await.unwrap(),
        v1,
        "a refusal changes nothing"
    );
    // A rotation: the same id, a new digest.
    let mut rotated = key("key_a", "alice", "d3");
    rotated.revoked_ms = None;
    store.save_key(rotated.clone()).await.unwrap();
    let keys = store.keys().await.unwrap();
    assert_eq!(keys.iter().filter(|k| k.id == "key_a").count(), 1);
    assert_eq!(keys.iter().find(|k| k.id == "key_a"), Some(&rotated));
    assert!(store.version().await.unwrap() > v1);

    let team = TeamRecord {
        name: "research".into(),
        limits: FleetLimits::default(),
        budget: Some(Budget {
            usd: 1.0,
            period: Period::Total,
        }),
        created_ms: 2,
    };
    store.save_team(team.clone(), true).await.unwrap();
    let again = store.save_team(team.clone(), true).await.unwrap_err();
    assert!(matches!(again, StoreError::Exists(_)), "{again}");
    let mut changed = team.clone();
    changed.limits.rpm = Some(3);
    store.save_team(changed.clone(), false).await.unwrap();
    let teams = store.teams().await.unwrap();
    assert_eq!(teams.iter().find(|t| t.name == "research"), Some(&changed));
}

/// The ledger keeps every row, sums them by any grouping, and keeps the totals budgets
/// are checked against.
pub(crate) async fn the_ledger(store: &dyn Fleet) {
    // 2026-11-25 and 2026-11-26, UTC noon.
    let (day1, day2) = (1_795_608_000_000, 1_795_694_400_000);
    let row = |time_ms, key: &str, model: &str, cost| LedgerRow {
        time_ms,
        request_id: format!("r{time_ms}{key}{model}"),
        key: Some(key.into()),
        team: Some("ledger-team".into()),
        route: "fast".into(),
        provider: "openai".into(),
        model: model.into(),
        input_tokens: 10,
        output_tokens: 5,
        cache_read_tokens: 4,
        reasoning_tokens: 1,
        cost,
        status: 200,
        ttfb_ms: Some(12),
        duration_ms: 40,
        ..Default::default()
    };
    let mut rows = vec![
        row(day1, "lk1", "m1", Some(0.25)),
        row(day2, "lk1", "m2", Some(0.5)),
        row(day2, "lk2", "m1", None),
    ];
    rows[2].cached = true;
    store.record(rows.clone()).await.unwrap();
    store.record(Vec::new()).await.unwrap();
    // Written again (its first answer lost): counted once.
    store.record(rows).await.unwrap();

    let all = store
        .usage(UsageQuery {
            team: Some("ledger-team".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(all.len(), 1);
    let all = &all[0];
    assert_eq!(
        (all.requests, all.input_tokens, all.output_tokens),
        (3, 30, 15)
    );
    assert_eq!((all.cache_read_tokens, all.reasoning_tokens), (12, 3));
    assert_eq!((all.cost, all.unpriced, all.cached), (0.75, 1, 1));

    let by_day = store
        .usage(UsageQuery {
            key: Some("lk1".into()),
            by: Some(By::Day),
            ..Default::default()
        })
        .await
        .unwrap();
    let days: Vec<_> = by_day
        .iter()
        .map(|l| (l.group.clone().unwrap(), l.requests, l.cost))
        .collect();
    assert_eq!(
        days,
        [
            ("2026-11-26".into(), 1, 0.5),
            ("2026-11-25".into(), 1, 0.25)
        ]
    );
    let since = store
        .usage(UsageQuery {
            team: Some("ledger-team".into()),
            since_ms: Some(day2),
            by: Some(By::Model),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(since.len(), 2, "{since:?}");
    assert_eq!(since.iter().map(|l| l.requests).sum::<i64>(), 2);

    let spend = store
        .spend(vec![Period::Day.at(day2), "total".into()])
        .await
        .unwrap();
    let of = |s: &str, p: &str| {
        spend
            .iter()
            .find(|x| x.subject == s && x.period == p)
            .map(|x| x.cost)
    };
    assert_eq!(of("key:lk1", "total"), Some(0.75));
    assert_eq!(of("key:lk1", "day:2026-11-26"), Some(0.5));
    assert_eq!(of("team:ledger-team", "total"), Some(0.75));
    assert_eq!(
        of("key:lk2", "total"),
        None,
        "an unknown price adds nothing"
    );
    assert!(
        spend
            .iter()
            .all(|s| !s.period.starts_with("day:2026-11-25"))
    );
}

/// Stored responses: kept, read, asked to stop, touched, failed when left untouched, and
/// deleted.
pub(crate) async fn stored_responses(store: &dyn Fleet) {
    let response = |id: &str, status: &str, updated_ms| StoredResponse {
        id: id.into(),
        owner: "key_a".into(),
        status: status.into(),
        created_ms: 1,
        updated_ms,
        cancel: false,
        body: format!(r#"{{"id":"{id}","status":"{status}"}}"#),
        input: "[]".into(),
        previous: None,
    };
    store
        .put_response(response("resp_done", "completed", 5))
        .await
        .unwrap();
    store
        .put_response(response("resp_run", "in_progress", 1_000))
        .await
        .unwrap();
    store
        .put_response(response("resp_gone", "queued", 10))
        .await
        .unwrap();
    assert_eq!(
        store.response("resp_done").await.unwrap(),
        Some(response("resp_done", "completed", 5))
    );
    assert_eq!(store.response("resp_none").await.unwrap(), None);
    assert!(
        !store
            .cancel_response("resp_done", "{}".into())
            .await
            .unwrap(),
        "it is done"
    );
    store
        .put_response(response("resp_stop", "in_progress", 1_000))
        .await
        .unwrap();
    let cancelled_body = r#"{"status":"cancelled"}"#.to_owned();
    assert!(
        store
            .cancel_response("resp_stop", cancelled_body.clone())
            .await
            .unwrap()
    );
    let cancelled = store
        .touch_responses(vec!["resp_stop".into(), "resp_run".into()], 2_000)
        .await
        .unwrap();
    assert_eq!(cancelled, ["resp_stop"]);
    // Its run's last word does not undo the cancel.
    assert!(
        !store
            .update_response(response("resp_stop", "completed", 3_000))
            .await
            .unwrap()
    );
    let stopped = store.response("resp_stop").await.unwrap().unwrap();
    assert_eq!(
        (stopped.status.as_str(), stopped.body),
        ("cancelled", cancelled_body)
    );
    assert_eq!(store.fail_stale(1_500).await.unwrap(), 1);
    let gone = store.response("resp_gone").await.unwrap().unwrap();
    assert_eq!(gone.status, "failed");
    let body: serde_json::Value = serde_json::from_str(&gone.body).unwrap();
    assert_eq!(body["status"], "failed");
    assert_eq!(body["error"]["code"], "server_error");
    assert_eq!(
        store.response("resp_run").await.unwrap().unwrap().status,
        "in_progress",
        "touched since"
    );
    assert_eq!(
        store.response("resp_stop").await.unwrap().unwrap().status,
        "cancelled"
    );
    // A run marked failed stays failed, whatever it says after.
    assert!(
        !store
            .update_response(response("resp_gone", "completed", 5_000))
            .await
            .unwrap()
    );
    assert_eq!(
        store.response("resp_gone").await.unwrap().unwrap().status,
        "failed"
    );
    // A new response's id taken already: the one kept stays.
    store
        .put_response(response("resp_run", "queued", 1))
        .await
        .unwrap();
    assert_eq!(
        store.response("resp_run").await.unwrap().unwrap().status,
        "in_progress"
    );
    // A run's later word is written while it runs; not once it is deleted, and its next
    // touch tells it to stop.
    let later = StoredResponse {
        body: "{\"later\":1}".into(),
        ..response("resp_run", "in_progress", 2_500)
    };
    assert!(store.update_response(later.clone()).await.unwrap());
    let now = store.response("resp_run").await.unwrap().unwrap();
    assert_eq!((now.body, now.input), (later.body.clone(), "[]".to_owned()));
    // A late word does not take back a final one.
    store
        .put_response(response("resp_late", "in_progress", 2_000))
        .await
        .unwrap();
    let done = response("resp_late", "completed", 2_600);
    assert!(store.update_response(done).await.unwrap());
    let late = response("resp_late", "in_progress", 2_700);
    assert!(!store.update_response(late).await.unwrap());
    assert_eq!(
        store.response("resp_late").await.unwrap().unwrap().status,
        "completed"
    );
    assert!(store.delete_response("resp_late").await.unwrap());
    assert!(store.delete_response("resp_run").await.unwrap());
    assert!(!store.update_response(later).await.unwrap());
    assert_eq!(store.response("resp_run").await.unwrap(), None);
    assert_eq!(
        store
            .touch_responses(vec!["resp_run".into()], 3_000)
            .await
            .unwrap(),
        ["resp_run"]
    );
    assert!(store.delete_response("resp_done").await.unwrap());
    assert!(!store.delete_response("resp_done").await.unwrap());
    // Old responses are forgotten, but not one under way.
    store
        .put_response(response("resp_run", "in_progress", 1_000))
        .await
        .unwrap();
    assert_eq!(store.forget_responses(2).await.unwrap(), 2, "gone and stop");
    assert!(store.response("resp_run").await.unwrap().is_some());

    // A conversation is a chain of turns, each with its own input and a link back.
    let turn = |n: usize, previous: Option<String>| StoredResponse {
        id: format!("resp_turn{n}"),
        owner: "key_chain".into(),
        input: format!(r#"[{{"turn":{n}}}]"#),
        previous,
        ..response("x", "completed", 10)
    };
    for n in 0..5 {
        let previous = (n > 0).then(|| format!("resp_turn{}", n - 1));
        store.put_response(turn(n, previous)).await.unwrap();
    }
    let chain = store.response_chain("resp_turn4", 100).await.unwrap();
    let ids: Vec<&str> = chain.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "resp_turn4",
            "resp_turn3",
            "resp_turn2",
            "resp_turn1",
            "resp_turn0"
        ]
    );
    assert_eq!(chain[1].input, r#"[{"turn":3}]"#);
    assert_eq!(chain[1].previous.as_deref(), Some("resp_turn2"));
    // At most as many as asked; a missing link ends it, its last still naming it.
    assert_eq!(
        store.response_chain("resp_turn4", 2).await.unwrap().len(),
        2
    );
    assert!(store.delete_response("resp_turn2").await.unwrap());
    let cut = store.response_chain("resp_turn4", 100).await.unwrap();
    assert_eq!(cut.len(), 2);
    assert_eq!(cut[1].previous.as_deref(), Some("resp_turn2"));
    assert!(
        store
            .response_chain("resp_none", 100)
            .await
            .unwrap()
            .is_empty()
    );
    // What each owner keeps, counted in bytes of its bodies and inputs.
    let each = turn(0, None).body.len() + r#"[{"turn":0}]"#.len();
    assert_eq!(
        store.stored_bytes("key_chain").await.unwrap(),
        4 * each as u64
    );
    assert_eq!(store.stored_bytes("key_nobody").await.unwrap(), 0);
}

/// Each owner sees only its own conversations.
pub(crate) async fn owners_see_only_their_own(a: &dyn Store, b: &dyn Store, user: &dyn Store) {
    let c = a.create("a's").await.unwrap();
    assert!(a.list().await.unwrap().iter().any(|x| x.id == c.id));
    assert!(b.list().await.unwrap().iter().all(|x| x.id != c.id));
    assert!(user.list().await.unwrap().iter().all(|x| x.id != c.id));
    assert!(matches!(b.get(&c.id).await, Err(StoreError::NotFound(_))));
    assert!(matches!(b.turns(&c.id).await, Err(StoreError::NotFound(_))));
    let turn = kite_store::Turn::new(vec![kite_core::Message::user("hi")]);
    assert!(matches!(
        b.append(&c.id, 0, turn.clone()).await,
        Err(StoreError::NotFound(_))
    ));
    assert!(!b.delete(&c.id).await.unwrap());
    assert_eq!(a.append(&c.id, 0, turn).await.unwrap(), 1);
    assert!(a.delete(&c.id).await.unwrap());
}
