# cisco.profile - a Cisco IoT Control Center-like platform (also China
# Unicom's 10646 platform, AT&T, Rogers...): REST, HTTP Basic with the API
# user and key, "do not exceed 5 calls per second" and "one call at a time".
# Replace base with the carrier's URL.

accounts = cucc-*
base = https://api.10646.cn/rws/api/v1
qps = 5
max_inflight = 1
interval_ms = 600000

basic = {carrier}:{api_key}
secret.api_key = file:/etc/srq/secrets/{carrier}.apikey

stop.method = PUT
stop.url = {base}/devices/{card}
stop.body = {"status":"DEACTIVATED"}
resume.method = PUT
resume.url = {base}/devices/{card}
resume.body = {"status":"ACTIVATED"}
query.method = GET
query.url = {base}/devices/{card}

code = errorCode
message = errorMessage
state = status
state.active = ACTIVATED
state.stopped = DEACTIVATED
# Every answer that says how a device stands names it: one about another
# device, or none, is not believed of this one.
card = iccid

rule = http=200 => ok
rule = http=202 => in_progress
rule = http=429 => throttle
rule = http=400 code=30000009 => too_frequent
rule = http=401,403 => reauth
rule = http=400-499 => fail
rule = * => unknown
