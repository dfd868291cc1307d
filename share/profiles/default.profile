# default.profile - srq's own gateway contract (what sr-gwsim speaks by
# default). It is built into srq: an account that no profile in SRQ_PROFILES
# names is served exactly so. Copy it to start a profile of your own; the
# docs/carriers.md ("Carrier profiles") describes every key.
#
# Placeholders: {base}, {gateway} (SRQ_GATEWAY or --gateway), {card},
# {carrier}, {action} (stop, resume, status), {ver}, {reqid}, {token} (a
# fetched token), {ts} (yyyyMMddHHmmss, UTC), {ms}, {seq}, {nonce}, {sign},
# and every set.NAME and secret.NAME. Limits a profile leaves out come from
# the environment (SRQ_QPS, SRQ_MAX_RUNNING, SRQ_MIN_INTERVAL_MS, ...).

base = {gateway}
# The same intent always carries the same request id: card, version, action.
reqid = {card}-{ver}-{action}

stop.method = POST
stop.url = {base}/v1/cards/{card}/stop
stop.body = {"carrier":"{carrier}","request_id":"{reqid}"}
resume.method = POST
resume.url = {base}/v1/cards/{card}/resume
resume.body = {"carrier":"{carrier}","request_id":"{reqid}"}
query.method = GET
query.url = {base}/v1/cards/{card}/status?carrier={carrier}
header = Idempotency-Key: {reqid}

# A bearer token from SRQ_GATEWAY_TOKEN_FILE (re-read when the file changes)
# or SRQ_GATEWAY_TOKEN; with neither set, the header is left out.
secret.gateway_token = env-file:SRQ_GATEWAY_TOKEN_FILE env:SRQ_GATEWAY_TOKEN
header = Authorization: Bearer {gateway_token}

# Reading the answers: the business code of a change, the state of a query.
code = code
# An accepted change's order id, when the gateway gives one (202 {"txn":…}).
txn = txn
state = status
state.active = active
state.stopped = stopped
# The card an answer is about: one about another card is not believed of
# this one. '?': checked when the answer names one (a gateway of srq's
# contract that leaves it out is still believed).
card = card?

# First match wins. A refusal the carrier did not apply (throttle, retry)
# gives the card's interval back; anything that may have applied keeps it.
rule = http=200,409 code=ALREADY => already
rule = http=200 code=OK => ok
rule = http=202 => in_progress
rule = http=429 => throttle
rule = code=THROTTLED => throttle
rule = http=409 code=TOO_FREQUENT => too_frequent
rule = http=401,403 => reauth
rule = http=400-499 => fail
rule = * => unknown

query.rule = http=200 => ok
query.rule = code=THROTTLED => throttle
query.rule = http=429 => throttle
query.rule = http=401,403 => reauth
query.rule = http=400-499 => fail
query.rule = * => unknown
