//! Limits in Redis (or Valkey), shared by every replica: one server-side script checks
//! every subject of a request and takes its place in each, all or nothing, on Redis's
//! clock (replicas' clocks may differ). Requests per minute are a sorted set of the last
//! minute's; tokens per minute a hash of the last minute's seconds; requests at once a
//! sorted set of leases, renewed while the request lasts, so that a replica that dies frees
//! its places within [`LEASE`]. Every call has [`REDIS_DEADLINE`]; past it Redis counts as
//! unreachable, and the connection is made again on the next call.

use super::{Local, Refusal, Slot, Subject, Unavailable};
use redis::aio::ConnectionManager;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long one call to Redis may take before Redis counts as unreachable.
const REDIS_DEADLINE: Duration = Duration::from_millis(500);

/// How long a request's place among those at once holds without being renewed: a replica
/// that dies frees its places within this.
const LEASE: Duration = Duration::from_secs(60);

/// Checks every subject, then takes a place in each: all or nothing, on Redis's clock.
/// KEYS: three per subject (its requests, tokens by second, requests under way); ARGV:
/// the request's id, the lease in ms, then per subject its rpm, tpm and parallel (0: none).
const ADMIT: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local id, lease = ARGV[1], tonumber(ARGV[2])
local n = #KEYS / 3
for i = 0, n - 1 do
  local req, tok, par = KEYS[3*i+1], KEYS[3*i+2], KEYS[3*i+3]
  local rpm, tpm, most = tonumber(ARGV[3+3*i]), tonumber(ARGV[4+3*i]), tonumber(ARGV[5+3*i])
  if rpm > 0 then
    redis.call('ZREMRANGEBYSCORE', req, '-inf', now - 60000)
    if redis.call('ZCARD', req) >= rpm then
      local first = redis.call('ZRANGE', req, 0, 0, 'WITHSCORES')
      return {'requests', tonumber(first[2]) + 60000 - now, i}
    end
  end
  if tpm > 0 then
    local fields = redis.call('HGETALL', tok)
    local sum, oldest = 0, nil
    for j = 1, #fields, 2 do
      local s = tonumber(fields[j])
      if s * 1000 <= now - 60000 then
        redis.call('HDEL', tok, fields[j])
      else
        sum = sum + tonumber(fields[j + 1])
        if oldest == nil or s < oldest then oldest = s end
      end
    end
    if sum >= tpm then return {'tokens', oldest * 1000 + 60000 - now, i} end
  end
  if most > 0 then
    redis.call('ZREMRANGEBYSCORE', par, '-inf', now)
    if redis.call('ZCARD', par) >= most then return {'parallel', 1000, i} end
  end
end
for i = 0, n - 1 do
  if tonumber(ARGV[3+3*i]) > 0 then
    redis.call('ZADD', KEYS[3*i+1], now, id)
    redis.call('PEXPIRE', KEYS[3*i+1], 60000)
  end
  if tonumber(ARGV[5+3*i]) > 0 then
    redis.call('ZADD', KEYS[3*i+3], now + lease, id)
    redis.call('PEXPIRE', KEYS[3*i+3], lease)
  end
end
return {'ok', 0, 0}
";

/// A request's end: adds ARGV[2] tokens to the current second of the first ARGV[1] keys
/// (tokens by second), and gives back the place ARGV[3] in the others.
const FINISH: &str = r"
local t = redis.call('TIME')
local n = tonumber(ARGV[1])
for i, k in ipairs(KEYS) do
  if i <= n then
    redis.call('HINCRBY', k, t[1], ARGV[2])
    redis.call('EXPIRE', k, 120)
  else
    redis.call('ZREM', k, ARGV[3])
  end
end
return 0
";

/// Renews the place ARGV[i + 1] in each key i for ARGV[1] ms.
const PLACE: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lease = tonumber(ARGV[1])
for i, k in ipairs(KEYS) do
  redis.call('ZADD', k, 'XX', now + lease, ARGV[i + 1])
  redis.call('PEXPIRE', k, lease)
end
return 0
";

/// Limits in Redis, shared by every replica.
pub(crate) struct Shared {
    redis: ConnectionManager,
    admit: redis::Script,
    finish: redis::Script,
    renew: redis::Script,
    /// When Redis cannot be reached.
    pub(crate) policy: Unavailable,
    /// This replica's own limits, for `Allow` while Redis is away.
    local: Arc<Local>,
    /// Places under way here, renewed while they last: the request's id and its keys.
    held: Arc<Mutex<HashMap<String, Vec<String>>>>,
    /// Whether Redis was last found unreachable (said once per outage).
    down: std::sync::atomic::AtomicBool,
}

/// A subject's keys. One hash tag for all, so that a request's keys (its key's and its
/// team's) are in one slot of a Redis Cluster, as its script needs.
fn keys_of(id: &str) -> [String; 3] {
    [
        format!("kite:{{limits}}:{id}:requests"),
        format!("kite:{{limits}}:{id}:tokens"),
        format!("kite:{{limits}}:{id}:parallel"),
    ]
}

impl Shared {
    /// Limits in the Redis at `url` (`redis://host:port/db`, `rediss://` for TLS). The
    /// connection is made on first use, and made again whenever it drops.
    pub(crate) fn new(url: &str, policy: Unavailable) -> Result<Self, String> {
        let client = redis::Client::open(url).map_err(|e| format!("the Redis URL: {e}"))?;
        let config = redis::aio::ConnectionManagerConfig::new()
            .set_connection_timeout(Some(REDIS_DEADLINE))
            .set_response_timeout(Some(REDIS_DEADLINE))
            .set_number_of_retries(1)
            .set_max_delay(Duration::from_secs(1));
        let redis = ConnectionManager::new_lazy_with_config(client, config)
            .map_err(|e| format!("Redis: {e}"))?;
        Ok(Self {
            redis,
            admit: redis::Script::new(ADMIT),
            finish: redis::Script::new(FINISH),
            renew: redis::Script::new(PLACE),
            policy,
            local: Arc::default(),
            held: Arc::default(),
            down: false.into(),
        })
    }

    /// Whether Redis answers a ping in time. A connection that broke while Redis was away
    /// fails its first command and is made again: a second ping then says whether Redis is
    /// back, so a load balancer sees it at once.
    pub(crate) async fn ready(&self) -> bool {
        let pinged = async {
            for _ in 0..2 {
                let mut c = self.redis.clone();
                if redis::cmd("PING")
                    .query_async::<String>(&mut c)
                    .await
                    .is_ok()
                {
                    return true;
                }
            }
            false
        };
        tokio::time::timeout(REDIS_DEADLINE, pinged)
            .await
            .unwrap_or(false)
    }

    /// Notes whether Redis answered (`failed`: why not): an outage and its end are each
    /// said once, and every request met during one is counted.
    fn reached(&self, failed: Option<String>, metrics: &crate::metrics::Metrics) {
        use std::sync::atomic::Ordering;
        let was_down = self.down.swap(failed.is_some(), Ordering::Relaxed);
        match (&failed, was_down) {
            (Some(why), false) => tracing::warn!(
                target: "kite::serve",
                policy = ?self.policy,
                "Redis cannot be reached ({why}): limits are {} until it is back",
                match self.policy {
                    Unavailable::Deny => "refusing requests (limits_unavailable = \"deny\")",
                    Unavailable::Allow => "held per replica (limits_unavailable = \"allow\")",
                }
            ),
            (None, true) => {
                tracing::info!(target: "kite::serve", "Redis is back: limits are shared again")
            }
            _ => {}
        }
        if failed.is_some() {
            metrics.unchecked(match self.policy {
                Unavailable::Deny => "deny",
                Unavailable::Allow => "allow",
            });
            if self.policy == Unavailable::Deny {
                metrics.refused("limits_unavailable");
            }
        }
    }

    /// Why Redis does not answer a ping in time, if it does not: for a word at start.
    pub(crate) async fn check(&self) -> Result<(), String> {
        let mut c = self.redis.clone();
        let ping = redis::cmd("PING");
        let asked = ping.query_async::<String>(&mut c);
        match tokio::time::timeout(REDIS_DEADLINE * 4, asked).await {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => Err(e.to_string()),
            Err(_) => Err("no answer in time".into()),
        }
    }

    pub(crate) async fn admit(
        self: &Arc<Self>,
        subjects: &[Subject],
        metrics: &crate::metrics::Metrics,
    ) -> Result<Slot, Refusal> {
        let id = crate::ids::new_token().unwrap_or_else(|_| format!("{:?}", Instant::now()));
        let mut invocation = self.admit.prepare_invoke();
        invocation.arg(&id).arg(LEASE.as_millis() as u64);
        let (mut parallel, mut taken) = (Vec::new(), Vec::new());
        for s in subjects {
            let [requests, tokens, places] = keys_of(&s.id);
            invocation.key(&requests).key(tokens).key(&places);
            taken.push(requests);
            taken.push(places.clone());
            invocation
                .arg(s.limits.requests_per_minute.unwrap_or(0))
                .arg(s.limits.tokens_per_minute.unwrap_or(0))
                .arg(s.limits.max_parallel.unwrap_or(0));
            if s.limits.max_parallel.is_some() {
                parallel.push(places);
            }
        }
        let mut c = self.redis.clone();
        let answer = tokio::time::timeout(
            REDIS_DEADLINE,
            invocation.invoke_async::<(String, i64, i64)>(&mut c),
        )
        .await;
        let (verdict, wait, at) = match answer {
            Ok(Ok(answer)) => {
                self.reached(None, metrics);
                answer
            }
            Ok(Err(e)) => {
                self.reached(Some(e.to_string()), metrics);
                self.undo(id, taken);
                return self.unreachable(subjects);
            }
            Err(_) => {
                self.reached(Some("no answer in time".into()), metrics);
                self.undo(id, taken);
                return self.unreachable(subjects);
            }
        };
        if verdict != "ok" {
            let kind = match verdict.as_str() {
                "tokens" => "tokens",
                "parallel" => "parallel",
                _ => "requests",
            };
            let wait = Duration::from_millis(wait.max(1000) as u64);
            let team = subjects
                .get(at as usize)
                .is_some_and(|s| s.id.starts_with("team:"));
            return Err(Refusal::Wait(wait, kind, team));
        }
        if !super::counts_at_end(subjects) {
            return Ok(Slot::none());
        }
        if !parallel.is_empty() {
            self.held
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(id.clone(), parallel.clone());
        }
        let tokens: Vec<String> = subjects
            .iter()
            .filter(|s| s.limits.tokens_per_minute.is_some())
            .map(|s| keys_of(&s.id)[1].clone())
            .collect();
        let (me, subjects) = (self.clone(), subjects.to_vec());
        Ok(Slot::releasing(Some(Box::new(move |used| {
            me.held
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&id);
            let tokens = match used {
                0 => Vec::new(),
                _ => tokens,
            };
            if tokens.is_empty() && parallel.is_empty() {
                return;
            }
            tokio::spawn(async move {
                let mut call = me.finish.prepare_invoke();
                call.arg(tokens.len()).arg(used).arg(&id);
                for k in tokens.iter().chain(&parallel) {
                    call.key(k);
                }
                let mut c = me.redis.clone();
                let done = tokio::time::timeout(REDIS_DEADLINE, call.invoke_async::<i64>(&mut c));
                if !matches!(done.await, Ok(Ok(_))) {
                    // Counted here at least while Redis is away; the places lapse with
                    // their lease.
                    me.local.spent(&subjects, used);
                }
            });
        }))))
    }

    /// Takes back what an admission whose answer was lost may have taken (its request in
    /// the minute, its places), as far as Redis can be reached.
    fn undo(self: &Arc<Self>, id: String, taken: Vec<String>) {
        let me = self.clone();
        tokio::spawn(async move {
            let mut call = me.finish.prepare_invoke();
            call.arg(0).arg(0).arg(&id);
            for k in &taken {
                call.key(k);
            }
            let mut c = me.redis.clone();
            let _ = tokio::time::timeout(REDIS_DEADLINE, call.invoke_async::<i64>(&mut c)).await;
        });
    }

    fn unreachable(&self, subjects: &[Subject]) -> Result<Slot, Refusal> {
        match self.policy {
            Unavailable::Deny => Err(Refusal::Unavailable),
            Unavailable::Allow => self.local.admit(subjects),
        }
    }

    /// Renews the leases of the places held here, every third of a lease, for as long as
    /// the gateway runs.
    pub(crate) async fn renew(self: Arc<Self>, stop: tokio_util::sync::CancellationToken) {
        loop {
            tokio::select! {
                () = tokio::time::sleep(LEASE / 3) => {}
                () = stop.cancelled() => return,
            }
            let held: Vec<(String, Vec<String>)> = self
                .held
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .iter()
                .map(|(id, keys)| (id.clone(), keys.clone()))
                .collect();
            // All in one call (in chunks, for a script's arguments).
            let places: Vec<(String, String)> = held
                .into_iter()
                .flat_map(|(id, keys)| keys.into_iter().map(move |k| (k, id.clone())))
                .collect();
            for chunk in places.chunks(1_000) {
                let mut call = self.renew.prepare_invoke();
                call.arg(LEASE.as_millis() as u64);
                for (key, id) in chunk {
                    call.key(key).arg(id);
                }
                let mut c = self.redis.clone();
                let _ =
                    tokio::time::timeout(REDIS_DEADLINE, call.invoke_async::<i64>(&mut c)).await;
            }
        }
    }
}
