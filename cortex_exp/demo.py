"""The embedded demo data: a deterministic knowledge base for coding agents and its serve log.

`generate(out_dir)` writes `corpus.jsonl` and `serves.jsonl` (formats: CONTRACT §3). Pure
standard library; the same seed and the same `now` give byte-identical files.

The data follow a hidden relevance model, so that the benchmark rows have something real to
find:

* ~35 projects, each with its own stack, domain nouns, edge cases and vendor; every project
  has six *topics* (a theme such as retries or migrations, applied to one domain noun).
* Every topic owns a handful of documents. *Easy* documents use the words agents use when they
  describe a task; *hard* ones talk about the same problem in other words (circuit breakers
  instead of retries, keyset cursors instead of pagination), so a lexical search rarely finds
  them; they are reachable through the documents they help together with.
* Every document has an intrinsic helpfulness; a served document of the task's topic is judged
  `helped` with that probability, so documents that helped before tend to help again, and the
  documents of one topic help together (the co-help edges a graph hop learns).
* Tasks are drawn from topics (several tasks per topic), phrased the way agents phrase them, and
  some are repeated in later sessions with other casing or white space.
* Rules are served on channel `always` on every serve; a few served documents are retired from
  the written corpus afterwards; some serves help with nothing.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

DEFAULT_SEED = 7

WINDOW_DAYS = 25          # serves spread over the last WINDOW_DAYS days before `now`
TOPICS_PER_PROJECT = 6
N_TASKS = 532             # distinct tasks (before the golden-set filters)
P_REPEAT = 0.30           # a task is served again in a later session
P_MISS = 0.085            # the serve found nothing of the task's topic
P_CREDIT = 0.6           # a serve with nothing helped gets its best topic document credited
P_HELP = 0.45            # a served topic document helps with P_HELP * its helpfulness
P_NOISE_REL = 0.14        # ... is judged noise with P_NOISE_REL * (1 - helpfulness)
P_NOISE_OTHER = 0.058     # a served document of another topic is judged noise
P_RETIRE = 0.04           # a served topic document is retired before the corpus is written

# --------------------------------------------------------------------------------------------
# projects: (name, stack, package, vendor, domain nouns, edge cases)
# --------------------------------------------------------------------------------------------

PROJECTS: list[tuple[str, str, str, str, list[str], list[str]]] = [
    ("billing-api", "py", "billing", "Stripe",
     ["invoice", "payment", "refund", "subscription", "credit_note"],
     ["currency is JPY", "the invoice has zero line items", "the customer is tax-exempt"]),
    ("ingest-pipeline", "py", "ingest", "Kafka",
     ["batch", "record", "partition", "manifest", "checkpoint"],
     ["the S3 prefix is empty", "a record exceeds 1 MB", "the manifest lists a missing file"]),
    ("auth-gateway", "go", "authgw", "Okta",
     ["session", "access_token", "client_app", "scope", "login_attempt"],
     ["the refresh token is reused", "clock skew exceeds 60 s", "the user has MFA enabled"]),
    ("mobile-ios", "swift", "feedkit", "Firebase",
     ["feed_item", "onboarding_step", "push_notification", "profile", "offline_cache"],
     ["the app is backgrounded", "the device runs iOS 16", "VoiceOver is enabled"]),
    ("mobile-android", "kotlin", "shop", "Google Play Billing",
     ["cart", "checkout", "deep_link", "work_request", "product_card"],
     ["the activity is recreated on rotation", "the device runs API 26",
      "the process is killed in the background"]),
    ("search-service", "java", "search", "Elasticsearch",
     ["query", "index_alias", "shard", "synonym_set", "ranking_profile"],
     ["the query contains quotes", "a shard is relocating", "the alias points to two indices"]),
    ("notification-service", "ts", "notify", "SendGrid",
     ["email", "sms", "template", "digest", "unsubscribe_link"],
     ["the locale is de-DE", "the recipient bounced before", "the template has no plain-text part"]),
    ("web-dashboard", "ts", "dashboard", "Mixpanel",
     ["chart", "filter_panel", "report", "widget", "date_range"],
     ["the range crosses a DST change", "the user has no projects", "the chart has 10k points"]),
    ("inventory-service", "go", "inventory", "ShipBob",
     ["sku", "stock_level", "warehouse", "reservation", "transfer"],
     ["two orders reserve the last unit", "the warehouse is closed", "the SKU is part of a bundle"]),
    ("order-service", "kotlin", "orders", "ShipStation",
     ["order", "fulfillment", "shipment", "line_item", "return_request"],
     ["the order is partially shipped", "the order mixes digital and physical items",
      "the customer cancels within 5 minutes"]),
    ("user-profile-service", "py", "profiles", "Cloudinary",
     ["profile", "avatar", "preference", "address", "consent"],
     ["the user deleted their account", "the address has no postcode", "the avatar is a HEIC file"]),
    ("analytics-etl", "py", "analytics", "BigQuery",
     ["event", "session", "dimension_table", "daily_rollup", "backfill_job"],
     ["events arrive a day late", "the partition is empty", "the user id is null"]),
    ("feature-flags", "go", "flags", "LaunchDarkly",
     ["flag", "segment", "rollout", "evaluation", "override"],
     ["the segment has 0 members", "the flag is archived", "the SDK is offline"]),
    ("payments-gateway", "java", "payments", "Adyen",
     ["authorization", "capture", "chargeback", "settlement", "payout"],
     ["the card requires 3-D Secure", "the capture is partial", "the acquirer times out"]),
    ("shipping-rates", "py", "shipping", "EasyPost",
     ["rate_quote", "carrier", "parcel", "zone", "label"],
     ["the parcel is overweight", "the destination is a PO box", "the carrier API is down"]),
    ("recommendation-engine", "py", "recs", "Feast",
     ["candidate", "embedding", "feature_vector", "model_version", "ranking_score"],
     ["the user is new with no history", "the item catalog changed", "the model version is missing"]),
    ("chat-service", "ts", "chat", "Redis Pub/Sub",
     ["message", "channel", "presence", "typing_indicator", "attachment"],
     ["the socket reconnects", "the message has a 25 MB attachment", "the user is in 500 channels"]),
    ("media-transcoder", "go", "transcode", "AWS MediaConvert",
     ["transcode_job", "rendition", "thumbnail", "hls_manifest", "upload"],
     ["the source is a vertical video", "the upload is over 4 GB", "the codec is HEVC"]),
    ("cms-backend", "ts", "cms", "Contentful",
     ["article", "revision", "slug", "asset", "publish_schedule"],
     ["the slug contains unicode", "two editors save at once", "the article is scheduled in the past"]),
    ("admin-console", "ts", "admin", "Okta",
     ["audit_log", "role", "impersonation", "bulk_action", "export_job"],
     ["the admin impersonates a suspended user", "the export has 1M rows", "the role was renamed"]),
    ("warehouse-dbt", "py", "dbt_models", "Snowflake",
     ["dbt_model", "seed", "snapshot", "incremental_model", "source_table"],
     ["the source is late", "a column was renamed upstream", "the snapshot key is null"]),
    ("ml-training", "py", "training", "Weights & Biases",
     ["dataset", "checkpoint", "training_run", "eval_split", "hyperparameter"],
     ["the GPU runs out of memory", "a dataset shard is corrupted", "training resumes from a checkpoint"]),
    ("infra-terraform", "hcl", "infra", "AWS",
     ["vpc", "iam_role", "state_file", "rds_instance", "s3_bucket"],
     ["the state is locked", "the plan shows a replace", "two workspaces share a bucket"]),
    ("k8s-platform", "go", "platform", "Kubernetes API",
     ["deployment", "ingress", "autoscaler", "namespace", "node_pool"],
     ["a node is drained", "the HPA flaps", "the namespace hits its quota"]),
    ("api-gateway", "go", "gateway", "Envoy",
     ["route", "upstream", "plugin", "api_key", "tenant"],
     ["the upstream returns a chunked body", "the route has a trailing slash", "the API key is revoked"]),
    ("email-renderer", "ts", "renderer", "Litmus",
     ["mjml_template", "partial", "preview", "inline_style", "merge_variable"],
     ["Outlook renders the email", "the variable is undefined", "dark mode is on"]),
    ("pricing-engine", "py", "pricing", "Avalara",
     ["price_rule", "discount", "coupon", "tier", "quote"],
     ["two coupons stack", "the price is zero", "the quantity sits exactly on a tier boundary"]),
    ("fraud-detection", "py", "fraud", "Sift",
     ["risk_score", "rule_set", "device_fingerprint", "review_case", "velocity_check"],
     ["the IP is a VPN exit node", "the card was used in two countries within an hour",
      "the score is exactly at the threshold"]),
    ("crm-sync", "py", "crm", "Salesforce",
     ["contact", "account", "field_mapping", "sync_cursor", "lead"],
     ["the Salesforce field is deleted", "a contact has two emails", "the sync cursor is reset"]),
    ("docs-site", "ts", "docs", "Algolia",
     ["page", "sidebar", "code_sample", "doc_version", "search_index"],
     ["the page has no front matter", "the link points to an old version",
      "the code sample is over 200 lines"]),
    ("loyalty-program", "kotlin", "loyalty", "Braze",
     ["points_balance", "reward", "tier_status", "redemption", "expiry_job"],
     ["points expire on Feb 29", "the redemption is refunded", "the member changes tier mid-month"]),
    ("scheduler-service", "go", "scheduler", "etcd",
     ["cron_job", "lease", "job_run", "calendar", "trigger"],
     ["the leader pod is evicted", "the cron expression has seconds", "two runs overlap"]),
    ("geo-service", "go", "geo", "Mapbox",
     ["geocode", "polygon", "tile", "route_plan", "place"],
     ["the address is in Japan", "the polygon crosses the antimeridian", "the tile zoom is 22"]),
    ("reporting-service", "java", "reports", "Amazon SES",
     ["report_definition", "csv_export", "pdf_render", "schedule", "recipient"],
     ["the report has 1M rows", "the recipient list is empty", "names in the CSV contain commas"]),
    ("identity-verification", "py", "idv", "Onfido",
     ["kyc_check", "document_upload", "liveness_check", "verification_session", "watchlist_hit"],
     ["the passport photo is blurry", "the name has diacritics", "the session expires mid-flow"]),
]

HANDLES = ["@mkowalski", "@asato", "@jdiaz", "@priya.n", "@tomasz", "@lchen", "@okafor",
           "@hrodriguez", "@eva.l", "@ssingh", "@mnovak", "@yuki", "@rbauer", "@a.haddad"]
COLUMNS = ["status", "external_ref", "tenant_id", "currency_code", "archived_at", "owner_id",
           "created_at", "region"]
LOCKFILES = {"py": "poetry.lock", "ts": "package-lock.json", "go": "go.sum",
             "swift": "Package.resolved", "kotlin": "gradle/libs.versions.toml", "java": "pom.xml",
             "hcl": ".terraform.lock.hcl"}

# --------------------------------------------------------------------------------------------
# themes: how a problem is phrased by agents (tasks), by documents that use the same words
# (easy) and by documents that describe it in other words (hard)
# --------------------------------------------------------------------------------------------

THEMES: dict[str, dict] = {
    "retry": dict(
        aspects=["retry", "backoff", "reconnect"], suffixes=["client", "worker"],
        keys=["RETRY_MAX_ATTEMPTS", "BACKOFF_BASE_MS"],
        errs=["ECONNRESET", "ETIMEDOUT", "E_TIMEOUT_504", "EPIPE"], http=["503", "504"],
        tasks=["Add retry with backoff to {noun} worker on {err}",
               "{noun} client gives up after the first {err} from {dep}, make it retry",
               "Retry {dep} calls in {file} when they fail with {err}",
               "Make {noun} sync resilient to HTTP {http} from {dep}",
               "Cap retries in {file} so a {dep} outage does not pile up requests"],
        easy_titles=[("decision", "Exponential backoff for {noun} retries"),
                     ("lesson", "{err} storms from {dep} during deploys"),
                     ("howto", "How to configure retries for the {noun} client"),
                     ("lesson", "Retries without backoff amplified a {dep} outage"),
                     ("decision", "Only retry idempotent {noun} calls")],
        hard_titles=[("decision", "Circuit breaker around {Noun}Client"),
                     ("lesson", "Thundering herd after the maintenance window"),
                     ("howto", "Tuning breaker thresholds"),
                     ("lesson", "Half-open state never closed on staging")],
        easy=["Calls from `{file}` to {dep} are retried up to 5 times with exponential backoff "
              "(base {ms} ms, factor 2) on {err} and HTTP {http}.",
              "The retry budget lives in `{setting}`; do not hardcode attempt counts in the {noun} worker.",
              "Only idempotent {noun} operations may be retried; POSTs need an `Idempotency-Key` header first.",
              "We saw {err} from {dep} whenever their load balancer rotated connections; a retry with "
              "backoff in the {noun} client fixed it.",
              "Without backoff the {noun} worker hammered {dep} with {num} requests per second during the outage.",
              "Log every retry attempt at WARNING with the attempt number so {err} bursts show up on the dashboard."],
        hard=["`{Noun}Client` is wrapped in a circuit breaker that opens after {num} consecutive "
              "failures and half-opens after 30 s.",
              "Sleep intervals are jittered uniformly in [0, cap] so pods do not reconnect in lockstep "
              "after a failover.",
              "The breaker state is exported as the gauge `{pkg}_breaker_open`; page only if it stays "
              "open longer than five minutes.",
              "Keep-alive sockets were recycled by the upstream LB every 350 s while our pool kept them "
              "for 600 s; lowering `idle_timeout` below the LB value removed the resets.",
              "Propagate one deadline from the inbound request instead of stacking per-call timeouts."]),
    "flaky_test": dict(
        aspects=["rounding", "ordering", "expiry", "serialization", "sync"], suffixes=["service"],
        keys=["TEST_SEED", "FAKE_CLOCK"], errs=["AssertionError", "TimeoutError", "E_FIXTURE_LEAK"],
        http=["500"],
        tasks=["Fix flaky test in {test} when {edge}",
               "{test} fails on CI but passes locally",
               "Stabilise {test}, it fails about 1 in 20 runs with {err}",
               "Flaky {noun} tests after enabling parallel test execution"],
        easy_titles=[("lesson", "Flaky {test} caused by shared fixture state"),
                     ("howto", "How to reproduce a flaky {noun} test locally"),
                     ("lesson", "Test passes locally, fails on CI: {noun} ordering"),
                     ("decision", "Quarantine flaky tests instead of retrying them")],
        hard_titles=[("howto", "Freezing the clock with a fake timer"),
                     ("lesson", "Leaked database rows between cases"),
                     ("decision", "Randomised suite order in CI")],
        easy=["`{test}` was flaky because it depended on the order rows came back from the {noun} "
              "query; sort explicitly before asserting.",
              "When {edge}, the test hit a code path that reads the current time; it failed only near midnight UTC.",
              "Run the test 50 times in a loop (`--count 50`) to reproduce a flaky test locally before touching it.",
              "CI runs the {noun} tests in parallel; any test that writes to the shared {noun} fixture "
              "must use its own tmp directory.",
              "Mark known flaky tests with `@flaky` and open a ticket; never add blind retries to the test runner.",
              "The {err} in `{test}` came from a fixture that was not reset between tests."],
        hard=["Inject a `Clock` into `{Noun}Service` and freeze it with a fake timer instead of sleeping "
              "in assertions.",
              "Each case now runs inside a transaction that is rolled back in teardown, so rows no longer "
              "leak between cases.",
              "The suite order is shuffled with a seed printed at start-up; rerun with that seed to get the "
              "same interleaving.",
              "Await the event emitted by the handler rather than polling with `sleep(0.1)`; polling was the "
              "source of the nondeterminism.",
              "Snapshot files must not include generated ids or timestamps; mask them with a serializer hook."]),
    "migration": dict(
        aspects=["migration", "backfill"], suffixes=["models", "repository"],
        keys=["MIGRATION_LOCK_TIMEOUT"],
        errs=["LockNotAvailable", "E_MIGRATION_CONFLICT", "UniqueViolation"], http=["500"],
        tasks=["Add a NOT NULL column to the {noun} table without locking it",
               "Write migration to backfill {noun_id}.{col} for existing rows",
               "Migration for {noun} fails with {err} on staging",
               "Rename column {col} on {noun} table with zero downtime"],
        easy_titles=[("decision", "Expand/contract migrations for the {noun} table"),
                     ("howto", "How to backfill a new {noun} column"),
                     ("lesson", "Migration on {noun} held an ACCESS EXCLUSIVE lock for 4 minutes"),
                     ("howto", "How to write a reversible migration")],
        hard_titles=[("lesson", "Writes stalled behind a DDL statement"),
                     ("howto", "Batching updates with a keyset walk"),
                     ("decision", "Set lock_timeout on every schema change")],
        easy=["Add the column as nullable first, backfill in batches of {num}, then add the NOT NULL "
              "constraint in a separate migration.",
              "The {noun} migration failed with {err} because two branches created migrations with the "
              "same down_revision.",
              "Never backfill inside the migration transaction; run `{pkg}.scripts.backfill_{noun_id}` after deploy.",
              "Column renames on the {noun} table go through expand/contract: add the new column, dual-write, "
              "migrate reads, drop the old column.",
              "Migrations run automatically on deploy; a migration that locks the {noun} table blocks every write."],
        hard=["Set `lock_timeout = '3s'` and `statement_timeout` in the session before any DDL so it "
              "gives up instead of queueing writers.",
              "Walk the primary key in ranges (`WHERE id > :last ORDER BY id LIMIT 1000`) and commit after each chunk.",
              "Postgres 11+ adds a constant default without rewriting the heap; a volatile default still rewrites.",
              "`CREATE INDEX CONCURRENTLY` cannot run inside a transaction block; mark that step `atomic = False`."]),
    "caching": dict(
        aspects=["cache", "ttl"], suffixes=["cache", "repository"], keys=["CACHE_TTL_SECONDS"],
        errs=["E_CACHE_MISS_STORM", "redis.exceptions.ConnectionError", "stale read"], http=["500"],
        tasks=["{noun} page shows stale data after update, invalidate the cache",
               "Add Redis caching to {noun} lookups in {file}",
               "Cache stampede on {noun} when the TTL expires",
               "Cache hit ratio for {noun} dropped since last deploy, investigate"],
        easy_titles=[("decision", "Cache {noun} reads in Redis with a 5-minute TTL"),
                     ("lesson", "Stale {noun} cache after bulk update"),
                     ("howto", "How to invalidate the {noun} cache"),
                     ("lesson", "Cache stampede when {noun} TTL expired at once")],
        hard_titles=[("decision", "Versioned keys instead of explicit deletes"),
                     ("howto", "Request coalescing with singleflight"),
                     ("lesson", "Eviction policy dropped hot keys")],
        easy=["{noun} reads go through `{Noun}Cache` backed by Redis; the TTL is `{setting}` ({num} s by default).",
              "After a bulk update the {noun} cache kept serving stale data because only single-row updates "
              "called `invalidate()`.",
              "Invalidate the cache entry in the same code path that commits the {noun} write, after the "
              "commit, never before.",
              "When many {noun} keys expired at once, every request missed the cache and hit Postgres; "
              "add jitter to the TTL.",
              "Cache keys are namespaced as `{pkg}:{noun_id}:<id>`; flush a namespace with "
              "`make cache-flush NS={noun_id}`."],
        hard=["Embed a schema version in every key (`v7:`) and bump it on deploy rather than deleting "
              "entries one by one.",
              "Concurrent misses for one key are collapsed with singleflight so only one worker queries the database.",
              "`maxmemory-policy` was `allkeys-random`; switching to `allkeys-lfu` kept hot entries resident.",
              "Write-through on update and read-repair on miss keep both stores consistent within one request."]),
    "auth": dict(
        aspects=["token", "session"], suffixes=["auth", "middleware"],
        keys=["JWT_LEEWAY_SECONDS", "TOKEN_TTL"], errs=["invalid_grant", "E_TOKEN_EXPIRED", "HTTP 401"],
        http=["401"],
        tasks=["Users get logged out randomly with {err}, fix token refresh",
               "{noun} endpoint returns 401 after token refresh",
               "Add scope check for {noun} writes in {file}",
               "Handle expired JWT in {file} gracefully when {edge}"],
        easy_titles=[("lesson", "Random logouts caused by refresh token reuse"),
                     ("decision", "Short-lived JWTs with refresh tokens for {noun} access"),
                     ("howto", "How to add a scope check to a {noun} endpoint"),
                     ("lesson", "401 after token refresh on {noun} calls")],
        hard_titles=[("lesson", "Clock drift between pods broke signature validation"),
                     ("decision", "Rotate signing keys through JWKS"),
                     ("howto", "Decoding claims with the debug CLI")],
        easy=["Access tokens live {num} minutes; the client must refresh the token before expiry, not after a 401.",
              "Two tabs refreshed the same refresh token concurrently; the second got `invalid_grant` and the "
              "user was logged out.",
              "Every {noun} write requires the `{noun_id}:write` scope, checked in `{file}`.",
              "Expired JWTs must map to HTTP 401 with `WWW-Authenticate: Bearer error=\"invalid_token\"`, not to a 500.",
              "Token validation for {noun} endpoints happens once in the auth middleware; handlers read `request.user`."],
        hard=["Allow {num} s of leeway on `exp`/`nbf` (`{setting}`); pod clocks drift by a few seconds under NTP.",
              "Public keys are fetched from the JWKS URL and cached by `kid`; an unknown `kid` triggers one "
              "refetch, not a failure.",
              "`make claims T=<jwt>` prints the decoded header and payload without verifying the signature.",
              "Serialise rotation per device with a short Redis lock so concurrent renewals reuse the same "
              "new credential."]),
    "rate_limit": dict(
        aspects=["throttle", "quota"], suffixes=["client", "limiter"], keys=["RATE_LIMIT_PER_MINUTE"],
        errs=["HTTP 429", "E_RATE_LIMITED"], http=["429"],
        tasks=["{dep} returns 429 when syncing {noun} data, add rate limiting",
               "Add per-tenant rate limit to the {noun} API",
               "Respect Retry-After header in {file}",
               "Bulk {noun} import hits the {dep} quota, throttle it"],
        easy_titles=[("decision", "Per-tenant rate limits on the {noun} API"),
                     ("lesson", "{dep} 429s during bulk {noun} import"),
                     ("howto", "How to honour Retry-After from {dep}")],
        hard_titles=[("decision", "Token bucket in Redis with Lua"),
                     ("lesson", "One noisy customer starved everyone else"),
                     ("howto", "Reading the X-RateLimit-Remaining header")],
        easy=["{dep} allows {num} requests per minute per account; the {noun} sync must throttle to stay "
              "under the quota.",
              "On HTTP 429 read `Retry-After` and sleep that long before the next {noun} request.",
              "Rate limits for the {noun} API are per tenant and configured in `{setting}`.",
              "The bulk {noun} import sent requests as fast as possible and was rate limited within seconds."],
        hard=["The limiter is a token bucket implemented as a Redis Lua script so refill and take are atomic.",
              "Fairness: a single customer could exhaust the shared pool; buckets are now keyed by `tenant_id`.",
              "Track `X-RateLimit-Remaining` and slow down proactively when it drops below 10 %.",
              "Queue outbound calls and drain them at a fixed pace with a leaky-bucket worker."]),
    "pagination": dict(
        aspects=["pagination", "cursor"], suffixes=["handler", "repository"], keys=["PAGE_SIZE_MAX"],
        errs=["E_INVALID_CURSOR", "HTTP 400"], http=["400"],
        tasks=["List {noun} endpoint returns duplicates across pages",
               "Switch {noun} listing from offset to cursor pagination",
               "Export of all {noun} rows is missing records when {edge}",
               "Add page_size limit to {file}"],
        easy_titles=[("decision", "Cursor pagination for {noun} listings"),
                     ("lesson", "Duplicate {noun} rows across pages with offset pagination"),
                     ("howto", "How to paginate through all {noun} records from {dep}")],
        hard_titles=[("decision", "Opaque continuation tokens"),
                     ("lesson", "Sorting by a non-unique column skipped items"),
                     ("howto", "Keyset queries with a tie-breaker")],
        easy=["Offset pagination on the {noun} list returned duplicates when rows were inserted between page requests.",
              "The {noun} endpoint uses cursor pagination: pass `next_page_token` from the previous response.",
              "`page_size` is capped at {num} by `{setting}`; larger values return HTTP 400.",
              "To export every {noun}, follow the cursor until it is empty; do not compute pages from a count."],
        hard=["Continuation tokens are base64 of `(created_at, id)` signed with HMAC so clients cannot forge them.",
              "ORDER BY created_at alone is not deterministic for equal timestamps; always add `id` as the tie-breaker.",
              "`WHERE (created_at, id) > (:c, :i)` uses the composite index and stays fast on the last chunk.",
              "Returning `has_more` instead of a total saves an expensive COUNT(*) per call."]),
    "timezone": dict(
        aspects=["timezone", "dst", "date"], suffixes=["scheduler", "formatter"], keys=["DEFAULT_TIMEZONE"],
        errs=["E_INVALID_DATE", "TypeError"], http=["500"],
        tasks=["{noun} dates off by one day for users in UTC-8",
               "Fix DST bug in {file} when {edge}",
               "{test} fails near midnight UTC, timezone issue",
               "Store {noun} timestamps in UTC instead of local time"],
        easy_titles=[("decision", "Store all {noun} timestamps in UTC"),
                     ("lesson", "Off-by-one day for {noun} dates west of UTC"),
                     ("lesson", "DST switch doubled the nightly {noun} job"),
                     ("howto", "How to convert {noun} times for display")],
        hard_titles=[("lesson", "Comparing offset-naive and offset-aware values"),
                     ("howto", "Using zoneinfo for wall-clock scheduling"),
                     ("decision", "Calendar values as plain DATE columns")],
        easy=["All {noun} timestamps are stored in UTC; convert to the user's timezone only at the edge, in `{file}`.",
              "Users west of UTC saw {noun} dates shifted by one day because the date was derived from a UTC timestamp.",
              "On the DST change the nightly {noun} job ran twice because it was scheduled in local time.",
              "`{setting}` defaults to UTC; never read the server's local timezone."],
        hard=["Mixing `datetime.now()` with `datetime.now(tz=UTC)` raises {err} on comparison; construct "
              "aware values everywhere.",
              "Use `zoneinfo.ZoneInfo('America/Los_Angeles')` for wall-clock schedules; a fixed offset breaks "
              "twice a year.",
              "A birthday or due day is a calendar value, not an instant; persist it as DATE without an offset.",
              "The window 02:00–03:00 does not exist on the spring transition in Europe/Berlin and exists twice "
              "in autumn."]),
    "serialization": dict(
        aspects=["serialization", "schema"], suffixes=["schema", "serializer"], keys=["STRICT_SCHEMA"],
        errs=["ValidationError", "E_SCHEMA_MISMATCH", "JSONDecodeError"], http=["500"],
        tasks=["{noun} JSON response drops field when value is null",
               "Decimal amounts in {noun} payload serialized as float, fix precision",
               "Fix {err} when deserializing {noun} from {dep}",
               "Add schema validation for {noun} payload in {file}"],
        easy_titles=[("decision", "Serialize {noun} amounts as strings, not floats"),
                     ("lesson", "{err} on {noun} payloads from {dep}"),
                     ("howto", "How to add a field to the {noun} schema")],
        hard_titles=[("decision", "Tolerant reader for upstream messages"),
                     ("lesson", "Precision lost in an IEEE-754 round trip"),
                     ("howto", "Generating typed models from the OpenAPI spec")],
        easy=["Monetary values in the {noun} JSON are serialized as strings (`\"12.30\"`), never as floats.",
              "{dep} started sending `null` for optional {noun} fields and our schema raised {err}.",
              "To add a field to the {noun} schema, update `{file}`, regenerate the client and bump the schema version.",
              "The serializer omitted null fields; clients expected the key to be present with value null."],
        hard=["Ignore unknown keys and default missing ones; reject only type errors that would corrupt state.",
              "0.1 + 0.2 != 0.3: the trip through binary floating point turned 19.99 into 19.989999999999998.",
              "Models are generated from `openapi.yaml` with `make codegen`; edit the spec, never the generated files.",
              "Use `Decimal` end to end and a custom encoder; `float()` anywhere on the path reintroduces rounding."]),
    "concurrency": dict(
        aspects=["race", "lock"], suffixes=["service", "worker"], keys=["WORKER_CONCURRENCY"],
        errs=["deadlock detected", "E_LOCK_TIMEOUT", "HTTP 409"], http=["409"],
        tasks=["Race condition when two requests update the same {noun}",
               "Deadlock detected in {noun} worker under load",
               "Duplicate {noun} created when the user double-clicks submit",
               "{file} returns 409 under concurrent updates"],
        easy_titles=[("lesson", "Race condition on concurrent {noun} updates"),
                     ("lesson", "Deadlock in {noun} worker during peak load"),
                     ("decision", "Optimistic locking for {noun} updates"),
                     ("howto", "How to reproduce {noun} race conditions")],
        hard_titles=[("decision", "Version column and compare-and-swap writes"),
                     ("lesson", "Inconsistent lock ordering between two transactions"),
                     ("howto", "FOR UPDATE SKIP LOCKED for work queues")],
        easy=["Two requests read the same {noun}, both modified it and the last write won; use optimistic locking.",
              "The {noun} worker deadlocked because two transactions locked rows in a different order.",
              "Concurrent updates to a {noun} now return HTTP 409 and the client retries with the fresh version.",
              "Double submits created a duplicate {noun}; the create endpoint now takes an idempotency key."],
        hard=["Each row carries `version`; the UPDATE includes `WHERE version = :v` and zero affected rows "
              "means someone else won.",
              "Always acquire row locks in primary-key order; the two code paths took them in opposite order.",
              "Consumers claim jobs with `SELECT ... FOR UPDATE SKIP LOCKED LIMIT 10` so they never block each other.",
              "A unique constraint on `(tenant_id, external_ref)` is the only reliable guard; application checks are racy."]),
    "config": dict(
        aspects=["config", "settings"], suffixes=["settings", "config"],
        keys=["DATABASE_URL", "REDIS_URL", "API_KEY"],
        errs=["KeyError", "E_CONFIG_MISSING", "ImproperlyConfigured"], http=["500"],
        tasks=["Move {noun} {dep} credentials from code to environment variables",
               "App crashes on startup with {err} when {setting} is unset",
               "Add config flag to disable {noun} sync in staging",
               "Staging uses the production {dep} endpoint, fix settings"],
        easy_titles=[("decision", "All {noun} settings come from environment variables"),
                     ("lesson", "Startup crash when {setting} was unset"),
                     ("howto", "How to add a new setting for {noun}")],
        hard_titles=[("decision", "Typed configuration object validated at boot"),
                     ("lesson", "The pre-prod tier pointed at a live host"),
                     ("howto", "Secrets via the Vault sidecar")],
        easy=["Every setting is read from the environment in `{file}`; `{setting}` has no default and must be set.",
              "The service crashed on startup with {err} because `{setting}` was unset in the new environment.",
              "To add a setting for {noun}, declare it in the settings module, document it in `.env.example` "
              "and add it to the Helm values.",
              "Do not read environment variables outside the settings module; import `settings.DATABASE_URL` instead."],
        hard=["The configuration object is validated once at boot and the process exits with a clear message "
              "if a field is invalid.",
              "`.env.staging` overrode the base URL with the prod host; each tier now has its own file checked by CI.",
              "Credentials are mounted by the Vault agent at `/vault/secrets/` and rotated without redeploying.",
              "`make print-config` dumps the resolved values with secrets redacted."]),
    "observability": dict(
        aspects=["logging", "metrics"], suffixes=["logging", "metrics"], keys=["LOG_LEVEL"],
        errs=["E_LOG_OVERFLOW", "missing trace_id"], http=["500"],
        tasks=["Add structured logging to {file}",
               "Logs for {noun} requests are missing trace_id",
               "Add metrics and an alert for {noun} failures",
               "Too many DEBUG logs from {noun} worker in production"],
        easy_titles=[("decision", "Structured JSON logging for {noun} handling"),
                     ("howto", "How to add a metric for {noun} failures"),
                     ("lesson", "Missing trace_id in {noun} logs")],
        hard_titles=[("lesson", "Label cardinality explosion in Prometheus"),
                     ("howto", "Propagating span context through background jobs"),
                     ("decision", "OpenTelemetry as the single tracing SDK")],
        easy=["Log with `logger.info(\"{noun_id}.created\", extra={{...}})`; the JSON formatter adds trace_id "
              "automatically.",
              "Logs emitted from the {noun} worker lacked trace_id because the context was not passed to the thread.",
              "Expose `{pkg}_{noun_id}_failures_total` and alert when its rate exceeds {num} per minute.",
              "`{setting}` is INFO in production; DEBUG logs from the {noun} worker filled the disk."],
        hard=["Putting user ids in a label created millions of series; keep ids in exemplars instead.",
              "Copy the span context into the job payload and restore it in the consumer so spans link up.",
              "We standardised on the OTel SDK with the OTLP exporter; vendor agents are being removed.",
              "Sampling keeps 100 % of error spans and 5 % of the rest."]),
    "deploy": dict(
        aspects=["deploy", "rollout"], suffixes=["deploy"], keys=["IMAGE_TAG"],
        errs=["CrashLoopBackOff", "ImagePullBackOff", "E_HEALTHCHECK_FAILED"], http=["503"],
        tasks=["Deploy of {project} stuck with {err}",
               "Add canary stage to the {project} deploy pipeline",
               "Roll back failed {noun} release and document the steps",
               "CI pipeline for {project} takes 25 minutes, speed it up"],
        easy_titles=[("howto", "How to roll back a {project} deploy"),
                     ("lesson", "{err} after {project} deploy"),
                     ("decision", "Canary deploys for {project}"),
                     ("howto", "Speeding up the {project} CI pipeline")],
        hard_titles=[("lesson", "Liveness probe depended on the database"),
                     ("howto", "Pinning the image digest in Helm values"),
                     ("decision", "Cache Docker layers between builds")],
        easy=["Roll back with `helm rollback {project} <revision>`; the deploy pipeline does not roll back automatically.",
              "The {project} deploy got stuck in {err} because a required environment variable was missing.",
              "Canary: 10 % of traffic for 15 minutes, then full rollout if the error rate stays under 1 %.",
              "The CI pipeline for {project} spent most of its time reinstalling dependencies; cache them by "
              "lockfile hash."],
        hard=["Liveness must not depend on downstream services; the probe hit `/health/db` and killed healthy "
              "pods during a DB blip.",
              "Reference images by digest (`@sha256:...`) so a retagged image cannot change what runs.",
              "Order Dockerfile steps from least to most frequently changing to keep layers reusable.",
              "Argo Rollouts analysis templates compare the new ReplicaSet's 5xx ratio with the stable one."]),
    "performance": dict(
        aspects=["latency", "query"], suffixes=["repository", "service"], keys=["DB_POOL_SIZE"],
        errs=["E_TIMEOUT_504", "QueryCanceled"], http=["504"],
        tasks=["{noun} list endpoint is slow, p99 over 2s",
               "Fix N+1 queries in {file}",
               "{noun} export times out with {err} for large tenants",
               "Add index to speed up {noun} lookup by {col}"],
        easy_titles=[("lesson", "N+1 queries in {noun} listing"),
                     ("howto", "How to profile a slow {noun} endpoint"),
                     ("decision", "Index {noun} lookups by tenant and {col}")],
        hard_titles=[("lesson", "Connection pool exhaustion under burst traffic"),
                     ("howto", "Reading EXPLAIN ANALYZE output"),
                     ("decision", "Precomputed aggregates refreshed by a job")],
        easy=["The {noun} list endpoint issued one query per row to load related data; eager loading cut p99 "
              "from 2.4 s to 180 ms.",
              "Profile a slow {noun} endpoint with the `X-Profile: 1` header in staging; it returns a flame graph.",
              "Exports for large tenants timed out with {err}; stream the {noun} rows instead of loading them all.",
              "Lookups of {noun} by `{col}` did a sequential scan; a composite index on `(tenant_id, {col})` fixed it."],
        hard=["`{setting}` was 5 while the app ran 20 threads; requests waited for a connection rather than "
              "for the database.",
              "`EXPLAIN (ANALYZE, BUFFERS)` shows whether the planner used the index and how many pages it read.",
              "Dashboards read from a materialized view refreshed every 5 minutes instead of aggregating on request.",
              "`select_related` / `joinedload` fetch associations in one round trip."]),
    "webhooks": dict(
        aspects=["webhook", "signature"], suffixes=["webhooks", "handler"], keys=["WEBHOOK_SECRET"],
        errs=["HTTP 409", "E_SIGNATURE_INVALID"], http=["409"],
        tasks=["{dep} webhook for {noun} processed twice, make handler idempotent",
               "Verify {dep} webhook signature in {file}",
               "Webhook handler returns 500 when {edge}",
               "Missed {noun} webhooks during outage, add replay"],
        easy_titles=[("decision", "Idempotent {noun} webhook handler"),
                     ("lesson", "Duplicate {dep} webhooks created duplicate {noun} rows"),
                     ("howto", "How to verify {dep} webhook signatures")],
        hard_titles=[("decision", "Store event ids with a unique constraint"),
                     ("howto", "Re-sending events from the provider dashboard"),
                     ("lesson", "HMAC compared with == leaked timing")],
        easy=["{dep} delivers webhooks at least once; the {noun} handler must be idempotent on the event id.",
              "Verify the webhook signature in `{file}` with the secret from `{setting}` before parsing the body.",
              "Return 2xx quickly and process the {noun} event asynchronously, or {dep} retries and duplicates pile up.",
              "A duplicate webhook created two {noun} rows; the handler now returns HTTP 409 for a seen event id."],
        hard=["Insert the event id into `processed_events` with a unique constraint inside the same transaction "
              "as the side effect.",
              "After the outage we re-sent events from the provider's dashboard for the affected window.",
              "Use a constant-time comparison (`hmac.compare_digest`) on the raw bytes, before JSON parsing.",
              "Reject deliveries whose timestamp is older than five minutes to block replay attacks."]),
    "dependencies": dict(
        aspects=["upgrade"], suffixes=["client", "compat"], keys=["SDK_VERSION"],
        errs=["ImportError", "DeprecationWarning", "E_PEER_DEP"], http=["500"],
        tasks=["Upgrade {dep} SDK in {project} to the latest major version",
               "Fix {err} after bumping dependencies in {lockfile}",
               "Remove deprecated API usage in {file} before upgrade",
               "Dependabot PR for {project} breaks the build"],
        easy_titles=[("howto", "How to upgrade the {dep} SDK"),
                     ("lesson", "{err} after dependency bump in {project}"),
                     ("decision", "Pin direct dependencies in {lockfile}")],
        hard_titles=[("lesson", "Transitive major version pulled in silently"),
                     ("decision", "Renovate grouping and weekly schedule"),
                     ("howto", "Running the test matrix against the next runtime")],
        easy=["Upgrade the {dep} SDK one major version at a time and read its changelog for removed methods.",
              "After bumping dependencies in `{lockfile}` the build failed with {err}; a renamed import in "
              "`{file}` was the cause.",
              "Direct dependencies are pinned in `{lockfile}`; bump them in a dedicated PR with the changelog linked.",
              "Dependabot PRs for {project} must pass the full test suite; do not merge them on green lint alone."],
        hard=["A minor bump of one library pulled a new major of its own child package; constrain it explicitly.",
              "Bots open grouped PRs on Mondays; security fixes bypass the schedule.",
              "CI runs a nightly job on the next interpreter so breakage shows up before we need it.",
              "Shims in `compat` isolate call sites from the vendor interface so only one file changes."]),
    "validation": dict(
        aspects=["validation", "errors"], suffixes=["validators", "handler"], keys=["MAX_PAYLOAD_BYTES"],
        errs=["E_VALIDATION_FAILED", "HTTP 422", "KeyError"], http=["422"],
        tasks=["{noun} endpoint returns 500 instead of 422 on invalid input",
               "Validate {noun} payload when {edge}",
               "Map {dep} errors to our error codes in {file}",
               "Return a helpful error message when {noun} {col} is missing"],
        easy_titles=[("decision", "Return 422 for invalid {noun} input"),
                     ("howto", "How to add validation to a {noun} endpoint"),
                     ("lesson", "500 on malformed {noun} payload")],
        hard_titles=[("decision", "Problem+JSON error bodies"),
                     ("howto", "Translating vendor failures into our catalogue"),
                     ("lesson", "Unhandled exception leaked a stack trace")],
        easy=["Invalid {noun} input must return HTTP 422 with the field name, never a 500.",
              "Validation for {noun} lives in `{file}`; handlers assume the payload is valid after it.",
              "A malformed {noun} payload when {edge} raised KeyError and surfaced as HTTP 500.",
              "Errors from {dep} are mapped to our error codes (e.g. {err}) in one place."],
        hard=["Error bodies follow RFC 7807: `type`, `title`, `status`, `detail`, plus an `errors` array per field.",
              "Each vendor failure is translated to an entry of our catalogue so clients never see vendor strings.",
              "The global exception handler logs the traceback and returns a generic body with a correlation id.",
              "Schemas reject unknown keys on write endpoints to catch typos early."]),
    "queue": dict(
        aspects=["consumer", "queue"], suffixes=["consumer", "worker"], keys=["CONSUMER_PREFETCH"],
        errs=["E_DLQ_OVERFLOW", "poison message", "consumer lag"], http=["500"],
        tasks=["{noun} consumer lag keeps growing on {dep}",
               "Poison message blocks the {noun} queue, add dead-letter queue",
               "Messages lost when {noun} worker restarts",
               "Process {noun} events in order per {col}"],
        easy_titles=[("lesson", "{noun} consumer lag after traffic spike"),
                     ("decision", "Dead-letter queue for {noun} events"),
                     ("howto", "How to replay {noun} messages from the DLQ")],
        hard_titles=[("lesson", "Acknowledging before the work was done"),
                     ("decision", "Partition key by aggregate id"),
                     ("howto", "Draining a stuck partition")],
        easy=["The {noun} consumer fell behind on {dep} because each message did a synchronous HTTP call; batch them.",
              "Messages that fail {num} times go to the `{noun_id}.dlq` dead-letter queue instead of blocking the queue.",
              "Replay messages from the DLQ with `make replay-dlq QUEUE={noun_id}` after fixing the bug.",
              "The {noun} worker lost messages on restart; messages are now acknowledged only after processing."],
        hard=["Auto-ack was on, so a crash between receive and commit dropped the work; switch to manual ack "
              "after the DB commit.",
              "Use the aggregate id as the partition key so changes to one entity are handled sequentially.",
              "Lower prefetch (`{setting}`) so one slow handler does not hoard a thousand unprocessed deliveries.",
              "Skip offsets only with an incident ticket; record the skipped range in the runbook."]),
    "i18n": dict(
        aspects=["locale", "i18n"], suffixes=["i18n", "formatter"], keys=["DEFAULT_LOCALE"],
        errs=["MissingTranslation", "E_LOCALE_FALLBACK", "UnicodeEncodeError"], http=["500"],
        tasks=["{noun} emails show raw translation keys in de-DE",
               "Format {noun} amounts with the user's locale",
               "Fix {err} for names with non-ASCII characters in {file}",
               "Add French translations for {noun} screens"],
        easy_titles=[("howto", "How to add a translation for {noun} strings"),
                     ("lesson", "Raw translation keys shown to German users"),
                     ("decision", "Format {noun} amounts with the user's locale")],
        hard_titles=[("lesson", "Crash on names like Zoë and Łukasz"),
                     ("decision", "ICU MessageFormat for plurals"),
                     ("howto", "Right-to-left layout checks")],
        easy=["Add new {noun} strings to `locales/en.json` first; the translation job picks them up nightly.",
              "German users saw raw translation keys because the de-DE bundle was not deployed with the {noun} release.",
              "Amounts are formatted with the user's locale: 1.234,56 € in de-DE, ¥1,235 in ja-JP.",
              "Fallback order is user locale → language → `{setting}` (en-US)."],
        hard=["Names such as Zoë, Łukasz or 山田 broke the ASCII-only encoder; everything is UTF-8 end to end now.",
              "Plural rules differ per language (Polish has four forms); use ICU MessageFormat, not `if n == 1`.",
              "Mirror paddings and chevrons for ar and he; test with the pseudo-locale `en-XA`.",
              "NFC-normalise input before comparing or hashing strings."]),
    "permissions": dict(
        aspects=["permission", "rbac"], suffixes=["permissions", "policy"], keys=["ADMIN_ROLE"],
        errs=["HTTP 403", "E_FORBIDDEN", "PermissionDenied"], http=["403"],
        tasks=["Viewer role can edit {noun} records, fix permission check",
               "Add RBAC permission for exporting {noun} data",
               "{noun} endpoint returns 403 for admins when {edge}",
               "Audit who changed {noun} permissions"],
        easy_titles=[("decision", "Role-based permissions for {noun} actions"),
                     ("lesson", "Viewers could edit {noun} records through the bulk endpoint"),
                     ("howto", "How to add a permission for a {noun} action")],
        hard_titles=[("decision", "Policy checks in one authorizer"),
                     ("lesson", "Tenant boundary crossed via guessable ids"),
                     ("howto", "Writing table-driven policy tests")],
        easy=["Every {noun} action checks a permission like `{noun_id}.edit` in `{file}`; roles map to permission sets.",
              "The bulk endpoint skipped the permission check, so viewers could edit {noun} records.",
              "To add a permission, declare it in the roles table, grant it to admin, and check it in the handler.",
              "Admins got HTTP 403 on {noun} when {edge} because the role lookup ignored the tenant."],
        hard=["Authorization decisions go through a single `authorize(actor, action, resource)` function; "
              "no ad-hoc checks.",
              "Resources are always fetched scoped to the caller's tenant; sequential ids made cross-tenant reads possible.",
              "Policy tables get table-driven tests: actor × action × resource → allow/deny.",
              "Deny by default; an unknown action is rejected and logged."]),
}

# --------------------------------------------------------------------------------------------
# rules and general project documents
# --------------------------------------------------------------------------------------------

GLOBAL_RULES = [
    ("Never commit secrets",
     "Never commit secrets, tokens or `.env` files; CI scans every push and blocks the merge."),
    ("Every bug fix needs a regression test",
     "Every bug fix comes with a regression test that fails without the fix."),
    ("Keep pull requests small",
     "Keep pull requests under ~400 changed lines; split refactors from behaviour changes."),
    ("Ask before destructive commands",
     "Never run destructive commands (`DROP TABLE`, `rm -rf`, `git push --force`) against shared "
     "environments without a human's approval."),
    ("Conventional commit messages",
     "Commit messages follow Conventional Commits, e.g. `fix(billing): round JPY amounts`."),
]

PROJECT_RULES = [
    ("Run lint and tests before pushing",
     "Run `make lint test` before pushing to {project}; CI runs the same targets."),
    ("No direct {dep} calls from handlers",
     "Never call {dep} directly from request handlers; go through `{Noun}Client`."),
    ("Database access through repositories",
     "Database access for {noun} goes through `{Noun}Repository`; no raw SQL in handlers."),
    ("New endpoints need a contract test",
     "Every new endpoint in {project} needs an OpenAPI entry and a contract test."),
    ("No PII in logs",
     "Do not log PII (emails, names, card numbers) in {project}; use the redacting logger."),
    ("Backwards-compatible migrations",
     "Migrations for {project} must stay compatible with the previous release until it is gone."),
    ("Ship behind a flag",
     "Feature work in {project} ships behind a flag read from `{setting}`."),
]

GENERAL_DOCS = [
    ("howto", "How to run {project} locally",
     "1. Copy `.env.example` to `.env`.\n2. Run `docker compose up -d` for the dependencies.\n"
     "3. Start the service with `make dev`; the {noun} fixtures load automatically."),
    ("howto", "{project} architecture overview",
     "{project} owns {noun} and {noun2}. Requests enter through the API layer, business rules live in "
     "`{file}`, and integrations with {dep} sit behind `{Noun}Client`."),
    ("howto", "On-call runbook for {project}",
     "Check the {project} dashboard first, then the error budget. Most pages come from {dep} degradations; "
     "confirm on their status page before rolling back."),
    ("decision", "Ownership of {noun2} data",
     "Context: two services wrote {noun2} records. Decision: {project} is the only writer; others consume "
     "events. Consequences: writes from elsewhere are rejected with HTTP 403."),
    ("howto", "Release process for {project}",
     "Releases are cut from main every weekday; tag with `vYYYY.MM.DD`, watch the canary for 15 minutes, "
     "then promote. Hotfixes follow the same path."),
    ("lesson", "What we learned from the {noun2} data loss drill",
     "Restoring {noun2} from the nightly snapshot took 47 minutes, longer than the 30-minute target; "
     "point-in-time recovery is now enabled."),
]

FILLERS = ["Owner: {handle}.", "See PR #{pr}.", "Discussed in #{project}-eng.",
           "Ticket: {ticket}.", "Related code: `{file}`.", "Last reviewed by {handle}."]

# --------------------------------------------------------------------------------------------
# identifiers
# --------------------------------------------------------------------------------------------


def _camel(s: str) -> str:
    return "".join(p[:1].upper() + p[1:] for p in s.replace("-", "_").split("_") if p)


def _lcamel(s: str) -> str:
    c = _camel(s.lower()) if s.isupper() else _camel(s)
    return c[:1].lower() + c[1:]


def _source_file(stack: str, pkg: str, noun: str, suffix: str, project: str) -> str:
    if suffix == "deploy":
        return {"py": ".github/workflows/deploy.yml", "ts": ".github/workflows/deploy.yml",
                "go": f"deploy/helm/{project}/values.yaml"}.get(stack, f"deploy/{project}.yaml")
    if stack == "py":
        return f"src/{pkg}/{noun}_{suffix}.py"
    if stack == "ts":
        return f"src/{pkg}/{_lcamel(noun)}{_camel(suffix)}.ts"
    if stack == "go":
        return f"internal/{pkg}/{noun}_{suffix}.go"
    if stack == "swift":
        return f"Sources/{_camel(pkg)}/{_camel(noun)}{_camel(suffix)}.swift"
    if stack == "kotlin":
        return f"app/src/main/java/com/acme/{pkg}/{_camel(noun)}{_camel(suffix)}.kt"
    if stack == "java":
        return f"src/main/java/com/acme/{pkg}/{_camel(noun)}{_camel(suffix)}.java"
    return f"modules/{noun}/{suffix}.tf"


def _test_name(stack: str, noun: str, aspect: str) -> str:
    if stack == "py":
        return f"test_{noun}_{aspect}"
    if stack == "ts":
        return f"{_lcamel(noun)}{_camel(aspect)}.test.ts"
    if stack == "swift":
        return f"test{_camel(noun)}{_camel(aspect)}"
    if stack in ("kotlin", "java"):
        return f"{_camel(noun)}{_camel(aspect)}Test"
    return f"Test{_camel(noun)}{_camel(aspect)}"


def _setting(stack: str, pkg: str, noun: str, key: str) -> str:
    if stack == "py":
        return f"settings.{key}" if key.endswith("_URL") else f"settings.{noun.upper()}_{key}"
    if stack == "ts":
        return f"config.{_lcamel(noun)}.{_lcamel(key)}"
    if stack == "go":
        return f"cfg.{_camel(noun)}{_camel(key.lower())}"
    if stack == "swift":
        return f"AppConfig.{_lcamel(noun)}{_camel(key.lower())}"
    if stack in ("kotlin", "java"):
        return f"{pkg}.{noun.replace('_', '-')}.{key.lower().replace('_', '-')}"
    return f"var.{noun}_{key.lower()}"


# --------------------------------------------------------------------------------------------
# model
# --------------------------------------------------------------------------------------------


@dataclass
class _Project:
    name: str
    stack: str
    pkg: str
    dep: str
    nouns: list[str]
    edges: list[str]
    rules: list[str] = field(default_factory=list)
    general: list[str] = field(default_factory=list)
    topics: list[int] = field(default_factory=list)
    popular: list[str] = field(default_factory=list)


@dataclass
class _Topic:
    project: _Project
    theme: str
    noun: str
    easy: list[str] = field(default_factory=list)
    hard: list[str] = field(default_factory=list)


@dataclass
class _Doc:
    id: str
    title: str
    text: str
    project: str | None
    kind: str
    always: bool
    topic: int | None = None
    helpfulness: float = 0.0


def _slots(rng: random.Random, p: _Project, theme: dict, noun: str) -> dict[str, str]:
    other = [n for n in p.nouns if n != noun]
    return {
        "project": p.name, "pkg": p.pkg, "dep": p.dep,
        "noun": noun.replace("_", " "), "noun_id": noun, "Noun": _camel(noun),
        "nounCamel": _lcamel(noun), "NOUN": noun.upper(),
        "noun2": rng.choice(other).replace("_", " "),
        "edge": rng.choice(p.edges),
        "file": _source_file(p.stack, p.pkg, noun, rng.choice(theme["suffixes"]), p.name),
        "test": _test_name(p.stack, noun, rng.choice(theme["aspects"])),
        "setting": _setting(p.stack, p.pkg, noun, rng.choice(theme["keys"])),
        "err": rng.choice(theme["errs"]), "http": rng.choice(theme["http"]),
        "num": str(rng.choice([3, 5, 8, 10, 20, 50, 100, 200, 500, 1000])),
        "ms": str(rng.choice([100, 200, 250, 500])),
        "col": rng.choice(COLUMNS), "lockfile": LOCKFILES[p.stack],
        "handle": rng.choice(HANDLES), "pr": str(rng.randint(180, 4200)),
        "ticket": f"{p.pkg.upper()[:4]}-{rng.randint(100, 2999)}",
    }


def _sentence_case(s: str) -> str:
    head = s.split(" ", 1)[0]
    return s[:1].upper() + s[1:] if head.isalpha() and head.islower() else s


def _compose(rng: random.Random, kind: str, sents: list[str]) -> str:
    if kind == "decision":
        labels = ["Context:", "Decision:", "Consequences:"]
        if rng.random() < 0.3:
            return "Status: accepted. " + " ".join(sents)
        return " ".join(f"{labels[min(i, 2)]} {s}" for i, s in enumerate(sents))
    if kind == "lesson":
        labels = ["What happened:", "Root cause:", "Fix:"]
        if rng.random() < 0.4:
            return " ".join(sents)
        return " ".join(f"{labels[min(i, 2)]} {s}" for i, s in enumerate(sents))
    return "\n".join(f"{i + 1}. {s}" for i, s in enumerate(sents))


def _vary(rng: random.Random, task: str) -> str:
    """The same task as another session types it: other casing, other white space."""
    out = task
    for _ in range(rng.choice([1, 1, 2])):
        r = rng.random()
        if r < 0.22:
            out = out.lower()
        elif r < 0.34:
            out = out[:1].swapcase() + out[1:]
        elif r < 0.58:
            words = out.split(" ")
            i = rng.randrange(1, len(words)) if len(words) > 1 else 0
            out = " ".join(words[:i]) + "  " + " ".join(words[i:]) if i else out + "  "
        elif r < 0.78:
            out = out + " "
        elif r < 0.86:
            out = " " + out
        elif r < 0.92:
            out = out.replace(" ", "\t", 1)
        else:
            out = out.upper() if len(out) < 40 else out[:1].lower() + out[1:]
    return out


def _iso(ts: datetime) -> str:
    return ts.strftime("%Y-%m-%dT%H:%M:%SZ")


# --------------------------------------------------------------------------------------------
# generation
# --------------------------------------------------------------------------------------------


def _build_world(rng: random.Random):
    docs: dict[str, _Doc] = {}
    projects: list[_Project] = []
    topics: list[_Topic] = []
    counters: dict[str, int] = {}

    def new_id(scope: str, kind: str) -> str:
        counters[scope] = counters.get(scope, 0) + 1
        return f"{scope}.{kind}.{counters[scope]:03d}"

    global_rules = []
    for title, text in GLOBAL_RULES:
        d = _Doc(new_id("global", "rule"), title, text, None, "rule", True)
        docs[d.id] = d
        global_rules.append(d.id)

    theme_names = sorted(THEMES)
    for name, stack, pkg, dep, nouns, edges in PROJECTS:
        p = _Project(name, stack, pkg, dep, list(nouns), list(edges))
        projects.append(p)
        # rules
        for title, text in rng.sample(PROJECT_RULES, rng.randint(2, 4)):
            s = _slots(rng, p, THEMES["config"], rng.choice(p.nouns))
            d = _Doc(new_id(name, "rule"), title.format(**s), text.format(**s), name, "rule", True)
            docs[d.id] = d
            p.rules.append(d.id)
        # general documents
        for kind, title, text in rng.sample(GENERAL_DOCS, rng.randint(3, 5)):
            s = _slots(rng, p, THEMES["config"], rng.choice(p.nouns))
            body = text.format(**s)
            if rng.random() < 0.5:
                body += " " + rng.choice(FILLERS).format(**s)
            d = _Doc(new_id(name, kind), title.format(**s), body, name, kind, False)
            docs[d.id] = d
            p.general.append(d.id)
        # topics
        chosen = rng.sample(theme_names, TOPICS_PER_PROJECT)
        focus = rng.sample(p.nouns, len(p.nouns))
        for i, th in enumerate(chosen):
            t = _Topic(p, th, focus[i % len(focus)])
            tix = len(topics)
            topics.append(t)
            p.topics.append(tix)
            theme = THEMES[th]
            for hard in (False, True):
                n = rng.randint(2, 4) if hard else rng.randint(4, 6)
                pool = list(theme["hard_titles" if hard else "easy_titles"])
                rng.shuffle(pool)
                sents_pool = theme["hard" if hard else "easy"]
                for j in range(n):
                    kind, title_t = pool[j % len(pool)]
                    s = _slots(rng, p, theme, t.noun)
                    k = min(len(sents_pool), rng.choice([2, 2, 3, 3, 4]))
                    sents = rng.sample(sents_pool, k)
                    if not hard and rng.random() < 0.25:
                        sents.append(rng.choice(theme["hard"]))
                    body = _compose(rng, kind, [x.format(**s) for x in sents])
                    if rng.random() < 0.45:
                        body += "\n" + rng.choice(FILLERS).format(**s)
                    title = _sentence_case(title_t.format(**s))
                    if j >= len(pool):
                        title += f" ({s['edge']})" if not hard else f" — {s['ticket']}"
                    if hard:
                        h = rng.betavariate(2.2, 1.4)
                    else:
                        h = rng.betavariate(1.3, 1.5)
                    d = _Doc(new_id(name, kind), title, body, name, kind, False, tix, h)
                    docs[d.id] = d
                    (t.hard if hard else t.easy).append(d.id)
        # documents that are boosted often and rarely help
        proj_docs = p.general + [x for tix in p.topics for x in topics[tix].easy]
        p.popular = rng.sample(proj_docs, 3)
    return docs, projects, topics, global_rules


def _pick(rng: random.Random, pool: list[str], taken: set[str]) -> str | None:
    free = [x for x in pool if x not in taken]
    return rng.choice(free) if free else None


def _simulate(rng: random.Random, docs, projects, topics, global_rules, now: datetime):
    by_theme: dict[str, list[int]] = {}
    for tix, t in enumerate(topics):
        by_theme.setdefault(t.theme, []).append(tix)

    # tasks: every topic gets a popularity; tasks are drawn from topics by popularity
    weights = [rng.gammavariate(1.4, 1.0) for _ in topics]
    seen: set[tuple[str, str]] = set()
    tasks: list[tuple[int, str]] = []
    while len(tasks) < N_TASKS:
        tix = rng.choices(range(len(topics)), weights=weights)[0]
        t = topics[tix]
        theme = THEMES[t.theme]
        s = _slots(rng, t.project, theme, t.noun)
        text = _sentence_case(rng.choice(theme["tasks"]).format(**s))
        key = (t.project.name, " ".join(text.casefold().split()))
        if key not in seen:      # a task typed again is a repeat, drawn below
            seen.add(key)
            tasks.append((tix, text))

    window = WINDOW_DAYS * 86400
    serves = []
    for n, (tix, text) in enumerate(tasks):
        t = topics[tix]
        p = t.project
        repeats = 0
        if rng.random() < P_REPEAT:
            repeats = rng.choices([1, 2, 3], weights=[70, 24, 6])[0]
        times = sorted(rng.uniform(300, window) for _ in range(1 + repeats))[::-1]
        miss = rng.random() < P_MISS
        others_same_project = [x for o in p.topics if o != tix
                               for x in topics[o].easy + topics[o].hard] + p.general
        others_same_theme = [x for o in by_theme[t.theme] if o != tix for x in topics[o].easy]
        other_rules = [x for o in projects if o is not p for x in o.rules]
        for r, age in enumerate(times):
            task_text = text if r == 0 else _vary(rng, text)
            items = []
            taken: set[str] = set()

            def add(channel: str, doc_id: str | None, score: float):
                if doc_id is not None and doc_id not in taken:
                    taken.add(doc_id)
                    items.append((score, channel, doc_id))

            for _ in range(rng.randint(3, 6)):
                u = rng.random()
                pool = (t.easy if u < 0.58 and not miss else
                        others_same_project if u < 0.85 else others_same_theme)
                add("search", _pick(rng, pool, taken), rng.uniform(0.4, 1.0))
            for _ in range(rng.choice([0, 1, 1, 2, 2, 3])):
                u = rng.random()
                pool = (t.hard if u < 0.62 and not miss else
                        t.easy if u < 0.8 and not miss else others_same_project)
                add("graph", _pick(rng, pool, taken), rng.uniform(0.2, 0.8))
            for _ in range(rng.choice([0, 0, 1, 1, 2])):
                if rng.random() < 0.45 and not miss:
                    best = sorted(t.easy + t.hard, key=lambda x: -docs[x].helpfulness)[:3]
                    add("boost", _pick(rng, best, taken), rng.uniform(0.1, 0.9))
                else:
                    add("boost", _pick(rng, p.popular, taken), rng.uniform(0.1, 0.9))
            while len(items) < 5:
                add("search", _pick(rng, others_same_project + others_same_theme, taken),
                    rng.uniform(0.0, 0.4))
            if rng.random() < 0.04:   # another project's rule came back from the search
                add("search", rng.choice(other_rules), rng.uniform(0.3, 1.0))
            items.sort(key=lambda x: (-x[0], x[2]))
            items = items[:12]

            out = []
            for rid in p.rules + global_rules:
                out.append({"doc_id": rid, "channel": "always", "rank": None,
                            "verdict": "noise" if rng.random() < 0.07 else None})
            for rank, (_, channel, doc_id) in enumerate(items, start=1):
                d = docs[doc_id]
                u = rng.random()
                if d.always:
                    verdict = rng.choice([None, None, "helped", "noise"])
                elif d.topic == tix:
                    h = d.helpfulness
                    if u < P_HELP * h:
                        verdict = "helped"
                    elif u < P_HELP * h + P_NOISE_REL * (1 - h):
                        verdict = "wrong" if rng.random() < 0.2 else "noise"
                    else:
                        verdict = None
                else:
                    if u < 0.01:
                        verdict = "helped"
                    elif u < 0.01 + P_NOISE_OTHER:
                        verdict = "wrong" if rng.random() < 0.22 else "noise"
                    else:
                        verdict = None
                out.append({"doc_id": doc_id, "channel": channel, "rank": rank, "verdict": verdict})
            # an agent that read the task's documents usually credits the best of them
            relevant = [it for it in out if it["channel"] != "always" and docs[it["doc_id"]].topic == tix]
            if relevant and not any(it["verdict"] == "helped" for it in out) and rng.random() < P_CREDIT:
                best = max(relevant, key=lambda it: (docs[it["doc_id"]].helpfulness, it["doc_id"]))
                if best["verdict"] is None and rng.random() < 0.3 + docs[best["doc_id"]].helpfulness:
                    best["verdict"] = "helped"
            ts = now - timedelta(seconds=age)
            serves.append((ts, n, r, {"project": p.name, "task": task_text, "items": out}))

    serves.sort(key=lambda x: (x[0], x[1], x[2]))
    rows = []
    for i, (ts, _, _, body) in enumerate(serves, start=1):
        digest = hashlib.sha1(f"{i}:{body['project']}:{body['task']}".encode()).hexdigest()[:6]
        rows.append({"serve_id": f"srv-{i:05d}-{digest}", "ts": _iso(ts), **body})
    return rows


def generate(out_dir: Path, seed: int = DEFAULT_SEED, now: datetime | None = None) -> tuple[Path, Path]:
    """Write out_dir/corpus.jsonl and out_dir/serves.jsonl; return their paths."""
    if now is None:
        now = datetime.now(timezone.utc)
    elif now.tzinfo is None:
        now = now.replace(tzinfo=timezone.utc)
    now = now.astimezone(timezone.utc).replace(microsecond=0)
    rng = random.Random(seed)

    docs, projects, topics, global_rules = _build_world(rng)
    serves = _simulate(rng, docs, projects, topics, global_rules, now)

    # retire some served topic documents (their past positives point at nothing now)
    served = sorted({it["doc_id"] for s in serves for it in s["items"]
                     if it["channel"] != "always" and docs[it["doc_id"]].topic is not None})
    retired = {x for x in served if rng.random() < P_RETIRE}

    kept = [d for i, d in sorted(docs.items()) if i not in retired]
    # edge cases: a handful of documents without a title, one without anything
    for d in rng.sample([d for d in kept if not d.always], 6):
        d.title = ""
    all_served = {it["doc_id"] for s in serves for it in s["items"]}
    unserved = sorted({d.id for d in kept if not d.always} - all_served)
    if unserved:
        blank = docs[rng.choice(unserved)]
        blank.title, blank.text = "", ""

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    corpus_path = out_dir / "corpus.jsonl"
    serves_path = out_dir / "serves.jsonl"
    with corpus_path.open("w", encoding="utf-8", newline="\n") as f:
        for d in kept:
            f.write(json.dumps({"id": d.id, "title": d.title, "text": d.text, "project": d.project,
                                "kind": d.kind, "always_served": d.always}, ensure_ascii=False) + "\n")
    with serves_path.open("w", encoding="utf-8", newline="\n") as f:
        for s in serves:
            f.write(json.dumps(s, ensure_ascii=False) + "\n")
    return corpus_path, serves_path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m cortex_exp.demo",
                                 description="Write the demo corpus.jsonl and serves.jsonl.")
    ap.add_argument("out_dir", type=Path)
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED)
    args = ap.parse_args(argv)
    for path in generate(args.out_dir, seed=args.seed):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
