# ct5gcmp.profile - a China Telecom 5GCMP-like platform: every request a
# GET signed in its headers, every answer XML inside HTTP 200, and every
# change an order that lands later (asynchronous), followed by its id.
#
# The headers carry the account's app key, the time in ms and the
# signature: the upper-case hex MD5 of every query parameter, decoded and
# sorted by name ({params}: docs/carriers.md, Signed requests), then the app secret,
# then the same time. A change is accepted with an order id
# (GROUP_TRANSACTIONID): srq polls the order (poll.*) until it is done
# (1), failed (2: called again after the interval) or still pending (0)
# past settle_ms; an order the carrier cannot name, or an answer about
# another order or card, falls back to the card's status query. Status 4
# is active (在用), 5 stopped (停机); any other (1 可激活, not yet activated;
# 7 拆机, closed) is alerted and never changed automatically. Replace base
# with the carrier's URL, and check every code below, and how the carrier
# signs, against its own documentation before going live: they are the
# simulator's (sr-gwsim --profile ct5gcmp), not the carrier's.

accounts = ct5g-*
base = https://cmp-api.ctwing.cn:20164/5gcmp/openapi/v1
qps = 5
max_inflight = 4
interval_ms = 600000
async = yes
poll_ms = 5000
settle_ms = 1800000

set.app_key = {carrier}
secret.app_secret = file:/etc/srq/secrets/{carrier}.appsecret

sign = md5
sign.case = upper
sign.input = {params}{app_secret}{ms}
header = AppKey: {app_key}
header = Timestamp: {ms}
header = Sign: {sign}

# orderTypeId 19 stops (停机保号), 20 resumes (复机).
stop.method = GET
stop.url = {base}/common/disabledNumberService?accessNumber={card}&orderTypeId=19
resume.method = GET
resume.url = {base}/common/disabledNumberService?accessNumber={card}&orderTypeId=20
query.method = GET
query.url = {base}/prodinst/queryCardMainStatus?accessNumber={card}
poll.method = GET
poll.url = {base}/common/queryOrderStatus?groupTransactionId={txn}

code = xml:RspCode
message = xml:RspDesc
txn = xml:GROUP_TRANSACTIONID
# Every answer that says how a card stands names it.
card = xml:accessNumber
state = xml:productMainStatusCd
state.active = 4
state.stopped = 5
poll.state = xml:STATUSCD
poll.done = 1
poll.failed = 2
poll.pending = 0
poll.card = xml:accessNumber
poll.txn = xml:GROUP_TRANSACTIONID

rule = code=0000 => ok
rule = code=0001 => already
rule = code=1010 => throttle
rule = code=1009 => too_frequent
rule = code=1003 => reauth
rule = code=1002,1001 => fail
rule = http=500-599 => unknown
rule = * => unknown
query.rule = code=0000 => ok
query.rule = code=1010 => throttle
query.rule = code=1003 => reauth
# An order the carrier does not know: not the card's failure; its status
# is asked instead.
query.rule = code=1004,1001 => fail
query.rule = http=500-599 => unknown
query.rule = * => unknown
