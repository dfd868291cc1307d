# onelink.profile - a China Mobile OneLink-like platform (API v5).
#
# Every answer is HTTP 200 with the outcome in the body's "status" ("0" is
# success; anything else is an error, even with HTTP 200). A token is fetched
# with the account's app id and password, cached for its ttl, and fetched
# again, once for all calls in flight, when the carrier says it expired
# (12021). Change: operType 0 stops, 1 resumes. Replace base with the
# carrier's URL, and check every code below against the carrier's own
# documentation before going live: the throttle, "too frequent" and
# "already" codes are not published.

accounts = cmcc-*
base = https://api.iot.10086.cn/v5/ec
qps = 5
max_inflight = 4
# The carrier's per-card window is 3 min (older documents say 30): srq's must
# not be shorter.
interval_ms = 1800000

set.appid = {carrier}
secret.password = file:/etc/srq/secrets/{carrier}.password
# transid: the app id, a timestamp and an 8-digit sequence, unique per call.
reqid = {appid}{ts}{seq}

token.method = GET
token.url = {base}/get/token?appid={appid}&password={password}&transid={reqid}
token.field = result[0].token
token.ttl_field = result[0].ttl

stop.method = POST
stop.url = {base}/change/sim-status
stop.body = {"msisdn":"{card}","operType":"0","token":"{token}","transid":"{reqid}"}
resume.method = POST
resume.url = {base}/change/sim-status
resume.body = {"msisdn":"{card}","operType":"1","token":"{token}","transid":"{reqid}"}
query.method = GET
query.url = {base}/query/sim-status?msisdn={card}&token={token}&transid={reqid}

code = status
message = message
state = result[0].cardStatus
# OneLink-CT card states: 2 active (已激活), 4 stopped (停机); anything else
# (1 awaiting activation, 6 testable, 7 stock, 8 pre-closed, 9 closed) is
# "other": alerted, never changed automatically.
state.active = 2,00
state.stopped = 4,02
# A change's answer names the card (result[0].msisdn), a query's does not:
# checked when present, and one about another card is not believed.
card = result[0].msisdn?

rule = code=0 => ok
rule = code=12021 => reauth
rule = code=12040 => throttle
rule = msg~频繁 => throttle
rule = code=12039 => too_frequent
rule = code=12058 => already
rule = code=12087 => fail
rule = http=500-599 => unknown
rule = * => unknown
