# ctcmp.profile - a China Telecom CMP-like platform (the older API): every
# call a GET to one path, with the account's user id, its password and a
# signature in the query string.
#
# The signature is the hex HMAC-SHA256, keyed with the account's signing
# key, of every other parameter of the query string, decoded and sorted by
# name ({params}: docs/carriers.md, Signed requests). A wrong signature or password
# is answered -5, as an authentication refusal: the secret files are read
# again and the call sent once more, then it is class auth. Every answer is
# XML in HTTP 200 with the outcome in resultCode ("0" is success), naming
# the card it is about (access_number). Replace base
# with the carrier's URL, and check every code below, and how the carrier
# signs, against its own documentation before going live: they are the
# simulator's (sr-gwsim --profile ctcmp), not the carrier's.

accounts = ctcc-*
base = https://api.ct10649.com:9001/m2m_ec
qps = 5
max_inflight = 4
interval_ms = 600000

set.user = {carrier}
secret.password = file:/etc/srq/secrets/{carrier}.password
secret.sign_key = file:/etc/srq/secrets/{carrier}.signkey

sign = hmac-sha256
sign.key = {sign_key}
sign.input = {params}

# orderTypeId 19 stops (停机保号), 20 resumes (复机).
stop.method = GET
stop.url = {base}/query.do?method=disabledNumber&user_id={user}&access_number={card}&orderTypeId=19&passWord={password}&sign={sign}
resume.method = GET
resume.url = {base}/query.do?method=disabledNumber&user_id={user}&access_number={card}&orderTypeId=20&passWord={password}&sign={sign}
query.method = GET
query.url = {base}/query.do?method=queryCardMainStatus&user_id={user}&access_number={card}&passWord={password}&sign={sign}

code = xml:resultCode
message = xml:resultMsg
txn = xml:GROUP_TRANSACTIONID
card = xml:access_number
state = xml:productMainStatusCd
# 4 active (在用), 5 stopped (停机); anything else (1 not yet activated,
# 7 closed, ...) is "other": alerted, never changed automatically.
state.active = 4
state.stopped = 5

rule = code=0 => ok
rule = code=-5 => reauth
rule = code=-6 => throttle
rule = code=-4 => too_frequent
rule = code=-3 => already
rule = code=-2 => fail
rule = http=500-599 => unknown
rule = * => unknown
