/* sr-gwsim - a carrier gateway simulator for the demo, the tests and the benchmarks.
 *
 * Speaks the gateway contract (the default profile: see the README,
 * Carrier profiles) and behaves like a carrier:
 * per-account QPS counted on arrivals (in any sliding second, per calendar
 * second, or as a token bucket; 429 with Retry-After over it), a cap on an
 * account's calls in flight, and a per-card minimum interval between
 * state-change calls, stop and resume together (409 TOO_FREQUENT inside it).
 * Tests change the rate and the failing account mid-run (/_sim/set). A
 * carrier may also accept a change and apply it later (--async-ms): a
 * background thread lands it on time. Faults are
 * injected on request: latency, 429, a permanent rejection, 5xx before or
 * after applying the change, a dropped connection after applying, a response
 * slower than the client's timeout after applying.
 *
 * It speaks one of four API shapes (--profile): the default one above,
 * OneLink's (China Mobile: tokens, status codes in 200 bodies), Cisco
 * Control Center's (Basic auth, PUT a device's status) or the older China
 * Telecom CMP's (GET, a signed query string). A request goes
 * through three steps: what it asks (parse, per shape), what the carrier
 * decides (a verdict, the same for every shape), and how the verdict is said
 * on the wire (answer, per shape). A request "arrives" when the carrier's
 * clock sees it, after a connection handshake and network jitter if asked:
 * rate limits count arrivals, not sends. Every request is logged as one JSON line, so
 * tests check srq's invariants from the gateway's side:
 *   {"t":ms,"kind":"stop","card":"...","carrier":"c17","http":200,
 *    "code":"OK","applied":true,"state":"stopped","fault":"","key":"...",
 *    "refused":false}
 * "applied" is true when the card's state was changed by this call;
 * "refused" when the carrier turned the call away, unapplied, and said so
 * (rate, authentication): such a call is certainly not a change.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include <microhttpd.h>

#include "sr.h"

static const char usage[] =
"usage: sr-gwsim [--profile default|onelink|cisco|ctcmp|ct5gcmp] [--port N]\n"
"                [--port-file F] [--log F] [--qps N]\n"
"                [--rate-mode sliding|fixed|bucket] [--burst B]\n"
"                [--max-inflight M] [--interval-ms N] [--cards F]\n"
"                [--latency-ms N] [--conn-delay-ms N] [--jitter-ms N]\n"
"                [--async-ms N] [--pending-state NAME] [--fault-429 P]\n"
"                [--retry-after S]\n"
"                [--throttle-in-body] [--fault-reject P] [--fault-5xx-before P]\n"
"                [--fault-5xx-after P] [--fault-drop-after P]\n"
"                [--fault-timeout-after P] [--fault-other-card P] [--other-card C]\n"
"                [--fault-order-failed P] [--fault-other-order P]\n"
"                [--slow-ms N] [--fail-account ID]\n"
"                [--seed N] [--token-file F] [--password-file F]\n"
"                [--sign-key-file F] [--token-ttl-ms N]\n"
"\n"
"A carrier gateway simulator on 127.0.0.1 (libmicrohttpd), in one of these\n"
"API shapes (--profile); the account of a call comes from the request.\n"
"\n"
"default\n"
"  POST /v1/cards/{card}/stop|resume  {\"carrier\":\"c17\",\"request_id\":\"...\"}\n"
"       header Idempotency-Key (logged as key)\n"
"       200 {\"code\":\"OK\",\"card\":\"CARD\"} | 200 {\"code\":\"ALREADY\",\"card\":\"CARD\"}\n"
"       409 {\"code\":\"TOO_FREQUENT\"}\n"
"       429 {\"code\":\"RATE_LIMITED\"} + Retry-After | 422 {\"code\":\"NOT_ALLOWED\"}\n"
"       401 {\"code\":\"UNAUTHORIZED\"} | 500 {\"code\":\"INTERNAL\"}\n"
"       --async-ms: 202 {\"code\":\"ACCEPTED\",\"card\":\"CARD\",\"txn\":\"T<n>\"}\n"
"  GET  /v1/cards/{card}/status?carrier=c17\n"
"       200 {\"card\":\"CARD\",\"status\":\"active\"|\"stopped\"|\"retired\"}\n"
"  GET  /v1/orders/{txn}?carrier=c17   (an accepted change's order)\n"
"       200 {\"card\":\"CARD\",\"txn\":\"T<n>\",\"order\":\"pending\"|\"done\"|\"failed\"}\n"
"       404 {\"code\":\"NO_ORDER\"} (not this account's)\n"
"onelink (China Mobile OneLink-like), GET with a query or POST with a JSON or\n"
"form body; the key is the transid, HTTP is 200 but for 5xx faults\n"
"  /v5/ec/get/token?appid=A&password=P&transid=X   (the appid is the account)\n"
"       {\"status\":\"0\",\"message\":\"正确\",\"result\":[{\"token\":\"<32 hex>\",\"ttl\":\"3600\"}]}\n"
"       wrong password: {\"status\":\"12001\",\"message\":\"APPID或密码错误\"}\n"
"  /v5/ec/change/sim-status?msisdn=CARD&operType=0|1&token=T&transid=X\n"
"       (0 stop, 1 resume; the account is the token's appid)\n"
"       {\"status\":\"0\",\"message\":\"正确\",\"result\":[{\"msisdn\":\"CARD\"}]}\n"
"       (--async-ms: \"jobId\":\"J<n>\" in result[0])\n"
"       12058 already, 12039 too frequent, 12040 over the rate, 12087 not\n"
"       allowed, 12021 unknown or expired token, 12002 bad parameters;\n"
"       5xx: HTTP 500, text/plain \"Internal Server Error\"\n"
"  /v5/ec/query/sim-status?msisdn=CARD&token=T&transid=X\n"
"       {\"status\":\"0\",\"message\":\"正确\",\"result\":[{\"cardStatus\":\"2\"|\"4\"|\"9\"}]}\n"
"       (active, stopped, retired)\n"
"cisco (Cisco IoT Control Center-like); HTTP Basic auth, the user is the account\n"
"  PUT  /rws/api/v1/devices/{iccid}  {\"status\":\"DEACTIVATED\"|\"ACTIVATED\"}\n"
"       200 {\"iccid\":\"CARD\"} (already in that state too)\n"
"       --async-ms: 202 {\"iccid\":\"CARD\",\"status\":\"PENDING\"}\n"
"  GET  /rws/api/v1/devices/{iccid}\n"
"       200 {\"iccid\":\"CARD\",\"status\":\"ACTIVATED\"|\"DEACTIVATED\"|\"RETIRED\"}\n"
"  errors {\"errorCode\":..,\"errorMessage\":..}: 401 10000001 bad credentials,\n"
"       429 40000029 over the rate (+ Retry-After), 400 30000009 too frequent,\n"
"       404 20000001 not allowed (Invalid ICCID), 500 30000001, 400 10000024\n"
"       bad status in the body\n"
"ctcmp (China Telecom CMP-like, the older API): GET, the account, its password\n"
"and a signature in the query string; XML in HTTP 200 but for 5xx faults\n"
"  /m2m_ec/query.do?method=disabledNumber&user_id=U&access_number=CARD\n"
"       &orderTypeId=19|20&passWord=P&sign=S   (19 stop, 20 resume; the account\n"
"       is the user_id)\n"
"       <businessServiceResponse><resultCode>0</resultCode><resultMsg>处理成功\n"
"       </resultMsg><access_number>CARD</access_number></businessServiceResponse>\n"
"       (--async-ms: <GROUP_TRANSACTIONID>T<n></GROUP_TRANSACTIONID>)\n"
"       -3 already, -4 too frequent, -6 over the rate, -2 not allowed, -5 a\n"
"       wrong signature or password, -1 bad parameters;\n"
"       5xx: HTTP 500, text/plain \"Internal Server Error\"\n"
"  /m2m_ec/query.do?method=queryCardMainStatus&user_id=U&access_number=CARD\n"
"       &passWord=P&sign=S\n"
"       ...<access_number>CARD</access_number><productMainStatusCd>4|5|1\n"
"       </productMainStatusCd>  (active, stopped, not yet activated: retired)\n"
"  S: the hex HMAC-SHA256, keyed with --sign-key-file's key, of every other\n"
"       parameter, decoded, sorted by name then by value (byte order), joined\n"
"       as k=v&k=v\n"
"ct5gcmp (China Telecom 5GCMP-like): GET, signed in headers, XML in HTTP 200\n"
"but for 5xx faults; the account is the AppKey header\n"
"  headers AppKey: A, Timestamp: ms, Sign: upper-case hex MD5 of the query\n"
"       parameters (decoded, sorted by name then value, k=v&k=v), then the\n"
"       app secret (--sign-key-file), then the Timestamp\n"
"  /5gcmp/openapi/v1/common/disabledNumberService?accessNumber=CARD\n"
"       &orderTypeId=19|20   (19 stop, 20 resume)\n"
"       <SvcCont><Response><RspType>0</RspType><RspCode>0000</RspCode>\n"
"       <RspDesc>成功</RspDesc></Response><accessNumber>CARD</accessNumber>\n"
"       </SvcCont>  (--async-ms: <GROUP_TRANSACTIONID>T<n></...>)\n"
"       0001 already, 1009 too frequent, 1010 over the rate, 1002 not\n"
"       allowed, 1003 a wrong signature, 1001 bad parameters\n"
"  /5gcmp/openapi/v1/prodinst/queryCardMainStatus?accessNumber=CARD\n"
"       ...<productInfo><accessNumber>CARD</accessNumber><productMainStatusCd>\n"
"       4|5|1</productMainStatusCd></productInfo>  (active, stopped, not yet\n"
"       activated: the retired state)\n"
"  /5gcmp/openapi/v1/common/queryOrderStatus?groupTransactionId=T<n>\n"
"       ...<GROUP_TRANSACTIONID>T<n></...><accessNumber>CARD</accessNumber>\n"
"       <STATUSCD>0|1|2</STATUSCD>  (pending, done, failed); 1004 no such order\n"
"every shape\n"
"  POST /_sim/set?qps=N&fail_account=ID&token_ttl_ms=N&order_failed=P  change\n"
"       the carrier mid-run (an empty fail_account clears it): 200 {\"ok\":true}, 400 on a bad\n"
"       parameter; neither logged nor counted\n"
"  Unknown paths are 404; card ids are [A-Za-z0-9_.-]{1,64}. A change call on\n"
"  a retired card is not allowed. Token fetches are not counted in the rate.\n"
"\n"
"Options:\n"
"  --profile P          the API shape: default, onelink, cisco, ctcmp or ct5gcmp\n"
"                       [default]\n"
"  --port N             port (0: any free port; see --port-file)  [8080]\n"
"  --port-file F        write the bound port to F once listening\n"
"  --log F              JSONL log of every call, query and token fetch [stderr]\n"
"  --qps N              per-account calls+queries per second, counted on arrival\n"
"                       (0: no limit) [0]; a refused arrival is not counted\n"
"  --rate-mode M        how --qps is counted [sliding]:\n"
"                       sliding  at most N in any 1000 ms\n"
"                       fixed    at most N per calendar second (floor(t/1000))\n"
"                       bucket   a bucket of --burst tokens, N more each second\n"
"  --burst B            the bucket's capacity (--rate-mode bucket) [N]\n"
"  --max-inflight M     at most M calls+queries of one account handled at once;\n"
"                       the excess is refused as over the rate (0: no limit) [0]\n"
"  --interval-ms N      per-card minimum interval between change calls, stop and\n"
"                       resume together, from the last accepted one (0: none) [0]\n"
"  --cards F            initial card states, JSONL {\"card\":..,\"status\":S}, S one\n"
"                       of active, stopped, retired [every card active]\n"
"  --latency-ms N       delay before answering each request, once arrived [0]\n"
"  --conn-delay-ms N    the first request of a new connection arrives N ms after\n"
"                       the connection was accepted (a TLS handshake); later\n"
"                       requests of a kept-alive connection are not delayed [0]\n"
"  --jitter-ms N        every request arrives a uniform random 0..N ms late [0]\n"
"  --async-ms N         accept change calls and change the card only N ms later,\n"
"                       logged as an \"apply\" line; queries show the old state\n"
"                       until then; \"already\" is judged on the state to come\n"
"                       (0: at once) [0]\n"
"  --pending-state NAME default: while a card's accepted change has not landed\n"
"                       (--async-ms), its status query answers the state NAME\n"
"                       ([A-Za-z0-9_.-]{1,32}, e.g. updating) instead of the old\n"
"                       one, and logs it as its code [none: the old state]\n"
"  --fault-429 P        refuse as over the rate with probability P (0..1) [0]\n"
"  --retry-after S      the Retry-After of every 429, in seconds [1]\n"
"  --throttle-in-body   default: refuse over the rate with 200\n"
"                       {\"code\":\"THROTTLED\"} (no Retry-After) instead of 429\n"
"  --fault-reject P     a permanent rejection, as for a retired card [0]\n"
"  --fault-5xx-before P answer 500 without applying [0]\n"
"  --fault-5xx-after P  apply, then answer 500 [0]\n"
"  --fault-drop-after P apply, then close the connection without an answer [0]\n"
"  --fault-timeout-after P apply, then answer only after --slow-ms [0]\n"
"  --fault-other-card P an answer that says how a card stands (a change's ok,\n"
"                       already or accepted, a query's state) names another card\n"
"                       (decided as usual; logged with \"named\") [0]\n"
"  --other-card CARD    the card those answers name, a query's with its state\n"
"                       [the card answered before]\n"
"  --fault-order-failed P an accepted change (--async-ms) fails at the carrier:\n"
"                       never lands; its order says failed once due [0]\n"
"  --fault-other-order P an order query is answered about another order (the\n"
"                       one before it; logged with \"named_txn\") [0]\n"
"  --slow-ms N          how late --fault-timeout-after answers [15000]\n"
"  --fail-account ID    every call of account ID, queries too, answers 500 (not\n"
"                       applied) [none]\n"
"  --seed N             seed of the fault generator [1]\n"
"  --token-file F       require \"Authorization: Bearer <token>\" (token read from\n"
"                       F) on every request, as an API gateway in front of the\n"
"                       carrier would: 401 {\"code\":\"UNAUTHORIZED\"} otherwise;\n"
"                       cisco: the Basic password instead\n"
"  --password-file F    onelink: the password of every appid; cisco: the Basic\n"
"                       password of every account; ctcmp: the passWord of\n"
"                       every account (read from F, trailing newline\n"
"                       stripped) [any password]\n"
"  --sign-key-file F    ctcmp: the key every account signs with; ct5gcmp: every\n"
"                       account's app secret (read from F, trailing newline\n"
"                       stripped); both need it\n"
"  --token-ttl-ms N     onelink: a token stops working N ms after its issue,\n"
"                       whatever ttl it advertised (0: never) [0]\n"
"  -h, --help, --version\n"
"The faults but --fail-account apply to stop/resume calls; status queries are\n"
"answered faithfully. Every call, query and token fetch is logged as one JSON\n"
"line (malformed requests and /_sim/ are not):\n"
"  {\"t\":ms,\"kind\":\"stop\",\"card\":..,\"carrier\":..,\"http\":200,\"code\":\"OK\",\n"
"   \"applied\":true,\"state\":\"stopped\",\"fault\":\"\",\"key\":..,\"refused\":false}\n"
"t is the arrival; kind is stop, resume, status, order, token or apply (an --async-ms\n"
"change landing at t: http 0, code APPLIED, applied, fault \"async\", the call's\n"
"txn and key; async accepted calls carry \"txn\" too); code is the shape's\n"
"business code (for an answered query, the state); http is 0 for a dropped\n"
"connection; state is the card's state after the request; refused is\n"
"true when the call was turned away unapplied and the carrier said so (rate,\n"
"in-flight, authentication), so it is certainly not a change.\n"
"SIGINT or SIGTERM stops it.\n"
"Exit: 0 stopped by a signal, 2 usage, 3 cannot listen.\n"
"Example:\n"
"  sr-gwsim --port 0 --port-file gw.port --log gw.log --qps 20 \\\n"
"      --interval-ms 1000 &\n"
"  curl -X POST -d '{\"carrier\":\"c17\"}' \\\n"
"      \"http://127.0.0.1:$(cat gw.port)/v1/cards/K1/stop\"\n"
"  sr-gwsim --profile cisco --port 8080 --async-ms 2000 &\n"
"  curl -X PUT -u c17:key -d '{\"status\":\"DEACTIVATED\"}' \\\n"
"      http://127.0.0.1:8080/rws/api/v1/devices/K1\n";

enum state { ST_ACTIVE, ST_STOPPED, ST_RETIRED };
static const char *const state_name[] = { "active", "stopped", "retired" };

enum kind { K_STOP, K_RESUME, K_STATUS, K_APPLY, K_TOKEN, K_ORDER };
static const char *const kind_name[] = { "stop", "resume", "status", "apply", "token", "order" };

/* The API shapes: where the account of a call comes from, and how each
 * verdict is said. */
enum profile { PR_DEFAULT, PR_ONELINK, PR_CISCO, PR_CTCMP, PR_CT5GCMP };
static const char *const profile_name[] = { "default", "onelink", "cisco", "ctcmp", "ct5gcmp" };

/* What the carrier decided about a request, whatever the API shape. */
enum verdict {
	V_NONE,         /* not decided yet */
	V_OK,           /* changed; for a query, the state */
	V_ALREADY,      /* the card was (or will be) in the asked state already */
	V_ACCEPTED,     /* --async-ms: the change lands later */
	V_TOO_FREQUENT, /* inside the card's interval */
	V_RATE,         /* over the account's rate (or the 429 fault): refused */
	V_AUTH,         /* bad or missing credentials (or token): refused */
	V_BEARER,       /* no good --token-file bearer: refused at the door */
	V_NOT_ALLOWED,  /* a permanent rejection (retired card, --fault-reject) */
	V_INTERNAL,     /* 5xx */
};

/* A state by its name, or -1. */
static int
state_parse(const char *s)
{
	for (int i = ST_ACTIVE; i <= ST_RETIRED; i++)
		if (!strcmp(s, state_name[i]))
			return i;
	return -1;
}

struct card {
	char id[65], carrier[65];
	enum state state;
	enum state will;     /* once its pending changes (--async-ms) have landed */
	int64_t last_change; /* last accepted change call, ms */
};

/* An account's rate, in the mode in force, and its calls in flight. */
struct account {
	char id[65];
	int64_t *arrivals; /* sliding: ring of admitted arrival times */
	long head, len, cap;
	int64_t second;    /* fixed: the calendar second counted */
	long count;
	double tokens;     /* bucket: what is left, refilled at qps per second */
	int64_t refilled;
	long inflight;
};

enum rate_mode { RM_SLIDING, RM_FIXED, RM_BUCKET };
static const char *const rate_mode_name[] = { "sliding", "fixed", "bucket" };

/* One HTTP request being received. */
struct ctx {
	int64_t arrived;
	char *body;
	size_t len;
};

/* One request, as asked and as decided. */
struct call {
	enum kind kind;
	char card[65], carrier[65], key[160], txn[24];
	char named[65];   /* the card its answer names: its own, but for --fault-other-card */
	enum state said;  /* the state a query's answer says: the named card's */
	int said_pending; /* --pending-state: the named card's change has not landed */
	int64_t arrived;
	enum verdict v;
	enum state state; /* the card's, after the request */
	int applied, drop, slow;
	const char *fault;
	char token[33];   /* K_TOKEN: the one issued */
	const char *order; /* K_ORDER: pending, done or failed; NULL: no such order */
	char named_txn[24]; /* the order its answer names: its own, but for --fault-other-order */
};

/* How a verdict is said on the wire. */
struct answer {
	int http;
	char body[512];
	const char *code; /* for the log */
	const char *type; /* Content-Type; NULL: JSON */
	int retry_after;
};

/* A OneLink token: each fetch issues a new one, and older ones of the same
 * appid stay valid until they expire themselves. */
struct token {
	char tok[33], appid[65];
	int64_t issued;
};

/* An accepted change that lands later (--async-ms), in a min-heap on due
 * (then n, the acceptance order, so a card's changes land in order). */
struct pending {
	int64_t due;
	unsigned long n;
	char card[65], carrier[65], key[160], txn[24];
	enum state state;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER; /* the applier's */
static struct pending *pend;
static size_t npend, cappend;
/* Every accepted change's order, by its number (txn T<n> at n - 1): an
 * order status query (K_ORDER) answers from it. */
struct order {
	char card[65], carrier[65];
	int64_t due;      /* when it lands, or fails */
	int fails;        /* --fault-order-failed: it never lands */
};
static struct order *orders;
static size_t capord;
static double porder_failed, pother_order;
static unsigned long ntxn;
static char txn_prefix = 'T'; /* OneLink says jobId J<n> */
static struct token *tokens;
static size_t ntokens, captokens;
static int stopping;
static long async_ms;
static const char *pending_state; /* --pending-state: NULL, none */
static struct card *cards;
static size_t ncards, capcards; /* open addressing, capcards a power of two */
static struct account *accounts;
static int naccounts;
static FILE *logf;
static long qps, interval_ms, latency_ms, slow_ms = 15000, retry_after_s = 1;
static enum rate_mode rate_mode;
static long burst = -1; /* bucket capacity; -1: follows qps */
static long max_inflight;
static double p429, preject, p5xx_before, p5xx_after, pdrop_after, ptimeout_after, pother_card;
static int throttle_in_body;
static char other_card[65]; /* --other-card */
static unsigned seed = 1, jitter_seed; /* jitter draws leave the faults' sequence alone */
static long conn_delay_ms, jitter_ms;
static char *token;     /* --token-file */
static char *password;  /* --password-file */
static char *sign_key;  /* --sign-key-file, as last read (key_now) */
static const char *sign_key_path;
static pthread_mutex_t keymu = PTHREAD_MUTEX_INITIALIZER;
static long token_ttl_ms;
static enum profile profile;
static char fail_account[65]; /* every call of this account: 500 */

static int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static size_t
hash(const char *s)
{
	size_t h = 5381;

	while (*s)
		h = h * 33 + (unsigned char)*s++;
	return h;
}

/* Find or add a card (caller holds mu). */
static struct card *
card_get(const char *id, const char *carrier)
{
	size_t i;

	if ((ncards + 1) * 2 > capcards) {
		struct card *old = cards;
		size_t oldcap = capcards;

		capcards = capcards ? capcards * 2 : 1024;
		cards = sr_malloc(capcards * sizeof *cards);
		memset(cards, 0, capcards * sizeof *cards);
		for (size_t k = 0; k < oldcap; k++)
			if (old[k].id[0]) {
				for (i = hash(old[k].id) & (capcards - 1); cards[i].id[0]; i = (i + 1) & (capcards - 1))
					;
				cards[i] = old[k];
			}
		free(old);
	}
	for (i = hash(id) & (capcards - 1); cards[i].id[0]; i = (i + 1) & (capcards - 1))
		if (!strcmp(cards[i].id, id))
			return &cards[i];
	snprintf(cards[i].id, sizeof cards[i].id, "%s", id);
	snprintf(cards[i].carrier, sizeof cards[i].carrier, "%s", carrier);
	ncards++;
	return &cards[i];
}

/* Find or add an account (caller holds mu). A few accounts per run: a list. */
static struct account *
account_get(const char *id)
{
	struct account *a;

	for (int i = 0; i < naccounts; i++)
		if (!strcmp(accounts[i].id, id))
			return &accounts[i];
	accounts = sr_realloc(accounts, (size_t)(naccounts + 1) * sizeof *accounts);
	a = &accounts[naccounts++];
	memset(a, 0, sizeof *a);
	snprintf(a->id, sizeof a->id, "%s", id);
	a->refilled = -1; /* a new bucket starts full */
	return a;
}

/* At most qps arrivals in any 1000 ms. The ring holds the admitted ones and
 * grows when /_sim/set raises qps. */
static int
admit_sliding(struct account *a, int64_t t)
{
	if (a->cap < qps) {
		int64_t *ring = sr_malloc((size_t)qps * sizeof *ring);

		for (long i = 0; i < a->len; i++)
			ring[i] = a->arrivals[(a->head + i) % a->cap];
		free(a->arrivals);
		a->arrivals = ring;
		a->head = 0;
		a->cap = qps;
	}
	while (a->len > 0 && a->arrivals[a->head] <= t - 1000) {
		a->head = (a->head + 1) % a->cap;
		a->len--;
	}
	if (a->len >= qps)
		return 0;
	a->arrivals[(a->head + a->len++) % a->cap] = t;
	return 1;
}

/* At most qps arrivals per calendar second: a burst across a second's
 * boundary gets twice the rate through, which a client must not count on.
 * An arrival stamped a little before the counted second (threads race to
 * the lock) is counted in it. */
static int
admit_fixed(struct account *a, int64_t t)
{
	if (t / 1000 > a->second) {
		a->second = t / 1000;
		a->count = 0;
	}
	if (a->count >= qps)
		return 0;
	a->count++;
	return 1;
}

/* A token bucket of --burst tokens refilled at qps per second. */
static int
admit_bucket(struct account *a, int64_t t)
{
	double cap = burst >= 0 ? (double)burst : (double)qps;

	if (a->refilled < 0) {
		a->tokens = cap;
		a->refilled = t;
	} else if (t > a->refilled) {
		a->tokens += (double)(t - a->refilled) * (double)qps / 1000;
		a->refilled = t;
	}
	if (a->tokens > cap)
		a->tokens = cap;
	if (a->tokens < 1)
		return 0;
	a->tokens -= 1;
	return 1;
}

/* Admit one arrival of the account: NULL, or why it is refused. A refused
 * arrival is not counted in the rate; an admitted one is in flight until
 * release() (caller holds mu). Accounts are kept only when something is
 * counted. */
static const char *
admit(const char *carrier, int64_t t)
{
	struct account *a;
	int ok = 1;

	if (qps <= 0 && max_inflight <= 0)
		return NULL;
	a = account_get(carrier);
	if (max_inflight > 0 && a->inflight >= max_inflight)
		return "inflight";
	if (qps > 0) {
		switch (rate_mode) {
		case RM_SLIDING: ok = admit_sliding(a, t); break;
		case RM_FIXED: ok = admit_fixed(a, t); break;
		case RM_BUCKET: ok = admit_bucket(a, t); break;
		}
	}
	if (!ok)
		return "qps";
	if (max_inflight > 0)
		a->inflight++;
	return NULL;
}

static void
release(const char *carrier)
{
	if (max_inflight <= 0)
		return;
	pthread_mutex_lock(&mu);
	account_get(carrier)->inflight--;
	pthread_mutex_unlock(&mu);
}

static double
coin(void)
{
	return (double)rand_r(&seed) / ((double)RAND_MAX + 1);
}

static void
log_call(const struct call *c, const struct answer *a)
{
	int refused = c->v == V_RATE || c->v == V_AUTH || c->v == V_BEARER;
	json_t *key = json_string(c->key); /* NULL if not UTF-8 (sent so, or cut to fit) */
	json_t *o = json_pack("{sI ss ss ss si ss sb ss ss so sb}", "t", (json_int_t)c->arrived,
	    "kind", kind_name[c->kind], "card", c->card, "carrier", c->carrier,
	    "http", c->drop ? 0 : a->http, "code", a->code, "applied", c->applied,
	    "state", c->kind == K_TOKEN ? "" : state_name[c->state],
	    "fault", c->fault ? c->fault : "", "key", key ? key : json_string(""),
	    "refused", refused);
	char *s;

	if (c->txn[0])
		json_object_set_new(o, "txn", json_string(c->txn));
	if (c->named[0] && strcmp(c->named, c->card))
		json_object_set_new(o, "named", json_string(c->named));
	if (c->named_txn[0] && strcmp(c->named_txn, c->txn))
		json_object_set_new(o, "named_txn", json_string(c->named_txn));
	s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
	fprintf(logf, "%s\n", s);
	fflush(logf);
	free(s);
	json_decref(o);
}

static enum MHD_Result
reply_as(struct MHD_Connection *con, int http, const char *type, const char *body,
    int retry_after)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(strlen(body), (void *)body,
	    MHD_RESPMEM_MUST_COPY);
	enum MHD_Result ret;

	MHD_add_response_header(r, "Content-Type", type ? type : "application/json");
	if (retry_after) {
		char ra[24];

		snprintf(ra, sizeof ra, "%ld", retry_after_s);
		MHD_add_response_header(r, "Retry-After", ra);
	}
	ret = MHD_queue_response(con, (unsigned)http, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result
reply(struct MHD_Connection *con, int http, const char *body, int retry_after)
{
	return reply_as(con, http, NULL, body, retry_after);
}

/* Copy src into dst (65 bytes) if it is an id, else make dst "": a long
 * id must be refused, not truncated into another one. */
static void
id_copy(char *dst, const char *src)
{
	dst[0] = '\0';
	if (src && sr_valid_id(src))
		snprintf(dst, 65, "%s", src);
}

/* With --token-file, an API gateway in front of the carrier wants the
 * bearer, whatever the shape behind it. */
static int
bearer_ok(struct MHD_Connection *con)
{
	const char *auth = MHD_lookup_connection_value(con, MHD_HEADER_KIND, "Authorization");

	return !token || (auth && !strncmp(auth, "Bearer ", 7) && !strcmp(auth + 7, token));
}

/* The default shape: POST /v1/cards/{card}/stop|resume, GET .../status.
 * Returns 0, or the HTTP status of a malformed request (body set). */
static int
parse_default(struct MHD_Connection *con, const char *method, const char *url,
    const struct ctx *cx, struct call *c, const char **bad)
{
	const char *p, *slash, *action;

	*bad = "{\"code\":\"NOT_FOUND\"}";
	if (!strncmp(url, "/v1/orders/", 11) && !strcmp(method, "GET")) {
		/* An accepted change's order: GET /v1/orders/{txn}?carrier=c17 */
		if (strlen(url + 11) >= sizeof c->txn || !sr_valid_id(url + 11))
			return 404;
		snprintf(c->txn, sizeof c->txn, "%s", url + 11);
		c->kind = K_ORDER;
		id_copy(c->carrier, MHD_lookup_connection_value(con, MHD_GET_ARGUMENT_KIND, "carrier"));
		*bad = "{\"code\":\"BAD_CARRIER\"}";
		if (!sr_valid_id(c->carrier))
			return 400;
		if (!bearer_ok(con))
			c->v = V_BEARER;
		return 0;
	}
	if (strncmp(url, "/v1/cards/", 10) != 0 || !(slash = strchr(url + 10, '/')) ||
	    (size_t)(slash - url - 10) >= sizeof c->card || slash == url + 10)
		return 404;
	memcpy(c->card, url + 10, (size_t)(slash - url - 10));
	action = slash + 1;
	if (!strcmp(method, "GET") && !strcmp(action, "status")) {
		c->kind = K_STATUS;
		p = MHD_lookup_connection_value(con, MHD_GET_ARGUMENT_KIND, "carrier");
		id_copy(c->carrier, p);
	} else if (!strcmp(method, "POST") && (!strcmp(action, "stop") || !strcmp(action, "resume"))) {
		json_t *j = cx->body ? json_loads(cx->body, 0, NULL) : NULL;

		c->kind = !strcmp(action, "stop") ? K_STOP : K_RESUME;
		id_copy(c->carrier, j ? sr_jstr(j, "carrier") : NULL);
		json_decref(j);
		p = MHD_lookup_connection_value(con, MHD_HEADER_KIND, "Idempotency-Key");
		snprintf(c->key, sizeof c->key, "%s", p ? p : "");
	} else
		return 404;
	*bad = "{\"code\":\"BAD_CARD\"}";
	if (!sr_valid_id(c->card))
		return 400;
	*bad = "{\"code\":\"BAD_CARRIER\"}";
	if (!sr_valid_id(c->carrier))
		return 400;
	if (!bearer_ok(con))
		c->v = V_BEARER;
	return 0;
}

static void
answer_default(const struct call *c, struct answer *a)
{
	static const struct {
		int http;
		const char *code;
	} w[] = {
		[V_OK] = { 200, "OK" },
		[V_ALREADY] = { 200, "ALREADY" },
		[V_ACCEPTED] = { 202, "ACCEPTED" },
		[V_TOO_FREQUENT] = { 409, "TOO_FREQUENT" },
		[V_RATE] = { 429, "RATE_LIMITED" },
		[V_AUTH] = { 401, "UNAUTHORIZED" },
		[V_BEARER] = { 401, "UNAUTHORIZED" },
		[V_NOT_ALLOWED] = { 422, "NOT_ALLOWED" },
		[V_INTERNAL] = { 500, "INTERNAL" },
	};

	a->http = w[c->v].http;
	a->code = w[c->v].code;
	if (c->v == V_RATE && throttle_in_body)
		a->http = 200, a->code = "THROTTLED";
	a->retry_after = a->http == 429;
	if (c->kind == K_ORDER && c->v == V_OK) {
		a->code = c->order;
		snprintf(a->body, sizeof a->body, "{\"card\":\"%s\",\"txn\":\"%s\",\"order\":\"%s\"}",
		    c->named, c->named_txn, c->order);
	} else if (c->kind == K_ORDER && c->v == V_NOT_ALLOWED) {
		a->http = 404, a->code = "NO_ORDER";
		snprintf(a->body, sizeof a->body, "{\"code\":\"NO_ORDER\"}");
	} else if (c->kind == K_STATUS && c->v == V_OK) {
		a->code = c->said_pending ? pending_state : state_name[c->said];
		snprintf(a->body, sizeof a->body, "{\"card\":\"%s\",\"status\":\"%s\"}", c->named, a->code);
	} else if (c->v == V_ACCEPTED)
		snprintf(a->body, sizeof a->body, "{\"code\":\"%s\",\"card\":\"%s\",\"txn\":\"%s\"}",
		    a->code, c->named, c->txn);
	else if (c->v == V_OK || c->v == V_ALREADY)
		snprintf(a->body, sizeof a->body, "{\"code\":\"%s\",\"card\":\"%s\"}", a->code, c->named);
	else
		snprintf(a->body, sizeof a->body, "{\"code\":\"%s\"}", a->code);
}

/* Decode %XX and '+' in place. */
static void
url_decode(char *s)
{
	char *o = s, hex[3] = "";

	for (; *s; s++) {
		if (*s == '+') {
			*o++ = ' ';
		} else if (*s == '%' && isxdigit((unsigned char)s[1]) && isxdigit((unsigned char)s[2])) {
			hex[0] = s[1], hex[1] = s[2];
			*o++ = (char)strtol(hex, NULL, 16);
			s += 2;
		} else
			*o++ = *s;
	}
	*o = '\0';
}

/* A POST body's parameters as a JSON object: a JSON body as it is, an
 * application/x-www-form-urlencoded one decoded into strings. NULL if none. */
static json_t *
body_params(struct MHD_Connection *con, const struct ctx *cx)
{
	const char *type = MHD_lookup_connection_value(con, MHD_HEADER_KIND, "Content-Type");
	char *copy, *save = NULL, *kv, *v;
	json_t *o;

	if (!cx->body)
		return NULL;
	if ((type && !strncasecmp(type, "application/json", 16)) || cx->body[0] == '{')
		return json_loads(cx->body, 0, NULL);
	o = json_object();
	copy = sr_strdup(cx->body);
	for (kv = strtok_r(copy, "&", &save); kv; kv = strtok_r(NULL, "&", &save)) {
		if ((v = strchr(kv, '=')))
			*v++ = '\0';
		url_decode(kv);
		if (v)
			url_decode(v);
		json_object_set_new(o, kv, json_string(v ? v : ""));
	}
	free(copy);
	return o;
}

/* A OneLink parameter: from the body if there is one, else the query.
 * Truncated to fit buf (ids are read with id_param, never truncated). */
static const char *
param(struct MHD_Connection *con, json_t *body, const char *name, char *buf, size_t len)
{
	json_t *v = json_is_object(body) ? json_object_get(body, name) : NULL;
	const char *q;

	if (json_is_string(v))
		snprintf(buf, len, "%s", json_string_value(v));
	else if (json_is_integer(v))
		snprintf(buf, len, "%lld", (long long)json_integer_value(v));
	else if ((q = MHD_lookup_connection_value(con, MHD_GET_ARGUMENT_KIND, name)))
		snprintf(buf, len, "%s", q);
	else
		buf[0] = '\0';
	return buf;
}

/* An id parameter into dst (65 bytes), or "" if absent or not an id. */
static void
id_param(struct MHD_Connection *con, json_t *body, const char *name, char *dst)
{
	char buf[256];

	id_copy(dst, param(con, body, name, buf, sizeof buf));
}

/* The token tok, newest first, or NULL (caller holds mu). */
static const struct token *
token_find(const char *tok)
{
	for (size_t i = ntokens; i-- > 0;)
		if (!strcmp(tokens[i].tok, tok))
			return &tokens[i];
	return NULL;
}

/* Issue a new token for appid into c->token (caller holds mu). */
static void
token_issue(struct call *c)
{
	unsigned char r[16];
	FILE *f = fopen("/dev/urandom", "r");
	struct token *t;

	if (!f || fread(r, 1, sizeof r, f) != sizeof r)
		for (size_t i = 0; i < sizeof r; i++) /* unlikely; unique is enough */
			r[i] = (unsigned char)rand_r(&jitter_seed);
	if (f)
		fclose(f);
	for (size_t i = 0; i < sizeof r; i++)
		snprintf(c->token + 2 * i, 3, "%02x", r[i]);
	if (ntokens == captokens) {
		captokens = captokens ? captokens * 2 : 64;
		tokens = sr_realloc(tokens, captokens * sizeof *tokens);
	}
	t = &tokens[ntokens++];
	snprintf(t->tok, sizeof t->tok, "%s", c->token);
	snprintf(t->appid, sizeof t->appid, "%s", c->carrier);
	t->issued = c->arrived;
}

/* OneLink (China Mobile) shape, GET with a query or POST with a JSON or
 * form body:
 *   /v5/ec/get/token?appid=&password=&transid=
 *   /v5/ec/change/sim-status?msisdn=&operType=0|1&token=&transid=
 *   /v5/ec/query/sim-status?msisdn=&token=&transid=
 * The account is the appid, the token's for calls and queries; the key
 * is the transid. Returns 0, or the HTTP status of an answer in *bad. */
static int
parse_onelink(struct MHD_Connection *con, const char *method, const char *url,
    const struct ctx *cx, struct call *c, const char **bad)
{
	json_t *body = !strcmp(method, "POST") ? body_params(con, cx) : NULL;
	char op[8], tok[80], pw[512];
	const struct token *t;
	int ret = 0;

	*bad = "{\"status\":\"12002\",\"message\":\"参数错误\"}";
	param(con, body, "transid", c->key, sizeof c->key);
	if ((strcmp(method, "GET") && strcmp(method, "POST")) || strncmp(url, "/v5/ec/", 7)) {
		*bad = "{\"code\":\"NOT_FOUND\"}";
		ret = 404;
	} else if (!strcmp(url + 7, "get/token")) {
		c->kind = K_TOKEN;
		id_param(con, body, "appid", c->carrier);
		param(con, body, "password", pw, sizeof pw);
		if (!sr_valid_id(c->carrier))
			ret = 200;
		else if (password && strcmp(pw, password))
			c->v = V_AUTH;
	} else if (!strcmp(url + 7, "change/sim-status") || !strcmp(url + 7, "query/sim-status")) {
		c->kind = url[7] == 'q' ? K_STATUS : !strcmp(param(con, body, "operType", op,
		    sizeof op), "0") ? K_STOP : K_RESUME;
		id_param(con, body, "msisdn", c->card);
		param(con, body, "token", tok, sizeof tok);
		if (!sr_valid_id(c->card) || (c->kind != K_STATUS && strcmp(op, "0") && strcmp(op, "1")))
			ret = 200;
		pthread_mutex_lock(&mu);
		if ((t = token_find(tok)))
			snprintf(c->carrier, sizeof c->carrier, "%s", t->appid);
		if (!t || (token_ttl_ms > 0 && c->arrived - t->issued >= token_ttl_ms))
			c->v = V_AUTH;
		pthread_mutex_unlock(&mu);
	} else {
		*bad = "{\"code\":\"NOT_FOUND\"}";
		ret = 404;
	}
	json_decref(body);
	if (!bearer_ok(con))
		c->v = V_BEARER;
	return ret;
}

/* What the shapes that answer HTTP 200 with the outcome in the body say
 * outside it: a 5xx as a plain-text 500, a missing --token-file bearer as
 * 401. 1 when a is that answer; else a->http is 200. */
static int
answer_outside(const struct call *c, struct answer *a)
{
	a->http = 200;
	if (c->v == V_INTERNAL) {
		a->http = 500, a->code = "INTERNAL", a->type = "text/plain";
		snprintf(a->body, sizeof a->body, "Internal Server Error");
		return 1;
	}
	if (c->v == V_BEARER) {
		a->http = 401, a->code = "UNAUTHORIZED";
		snprintf(a->body, sizeof a->body, "{\"code\":\"UNAUTHORIZED\"}");
		return 1;
	}
	return 0;
}

static void
answer_onelink(const struct call *c, struct answer *a)
{
	static const struct {
		const char *status, *message;
	} w[] = {
		[V_OK] = { "0", "正确" },
		[V_ALREADY] = { "12058", "卡状态已是目标状态" },
		[V_ACCEPTED] = { "0", "正确" },
		[V_TOO_FREQUENT] = { "12039", "同一卡号3分钟内不能重复办理" },
		[V_RATE] = { "12040", "调用频繁，请稍后再试" },
		[V_AUTH] = { "12021", "TOKEN不存在或已过期，请重新获取" },
		[V_NOT_ALLOWED] = { "12087", "号码状态不允许办理" },
	};
	static const char *const card_status[] = { "2", "4", "9" }; /* active, stopped, retired */

	if (answer_outside(c, a))
		return;
	if (c->kind == K_TOKEN && c->v == V_AUTH) {
		a->code = "12001";
		snprintf(a->body, sizeof a->body, "{\"status\":\"12001\",\"message\":\"APPID或密码错误\"}");
		return;
	}
	a->code = w[c->v].status;
	if (c->v != V_OK && c->v != V_ACCEPTED)
		snprintf(a->body, sizeof a->body, "{\"status\":\"%s\",\"message\":\"%s\"}", a->code,
		    w[c->v].message);
	else if (c->kind == K_TOKEN)
		snprintf(a->body, sizeof a->body, "{\"status\":\"0\",\"message\":\"正确\",\"result\":"
		    "[{\"token\":\"%s\",\"ttl\":\"3600\"}]}", c->token);
	else if (c->kind == K_STATUS) {
		a->code = state_name[c->said];
		snprintf(a->body, sizeof a->body, "{\"status\":\"0\",\"message\":\"正确\",\"result\":"
		    "[{\"cardStatus\":\"%s\"}]}", card_status[c->said]);
	} else if (c->v == V_ACCEPTED)
		snprintf(a->body, sizeof a->body, "{\"status\":\"0\",\"message\":\"正确\",\"result\":"
		    "[{\"msisdn\":\"%s\",\"jobId\":\"%s\"}]}", c->named, c->txn);
	else
		snprintf(a->body, sizeof a->body, "{\"status\":\"0\",\"message\":\"正确\",\"result\":"
		    "[{\"msisdn\":\"%s\"}]}", c->named);
}

/* Cisco IoT Control Center shape:
 *   PUT /rws/api/v1/devices/{iccid}  {"status":"DEACTIVATED"|"ACTIVATED"}
 *   GET /rws/api/v1/devices/{iccid}
 * HTTP Basic: the user is the account, the password its API key (from
 * --password-file, or --token-file). Returns 0, or the HTTP status of an
 * answer in *bad. */
static int
parse_cisco(struct MHD_Connection *con, const char *method, const char *url,
    const struct ctx *cx, struct call *c, const char **bad)
{
	static const char prefix[] = "/rws/api/v1/devices/";
	const char *key = password ? password : token, *st, *p;
	char *user, *pw = NULL;
	json_t *j;

	*bad = "{\"code\":\"NOT_FOUND\"}";
	if (strncmp(url, prefix, sizeof prefix - 1) || (strcmp(method, "GET") && strcmp(method, "PUT")))
		return 404;
	*bad = "{\"errorCode\":\"20000001\",\"errorMessage\":\"Invalid ICCID\"}";
	if (!sr_valid_id(url + sizeof prefix - 1))
		return 404;
	snprintf(c->card, sizeof c->card, "%s", url + sizeof prefix - 1);
	c->kind = K_STATUS;
	if (!strcmp(method, "PUT")) {
		j = cx->body ? json_loads(cx->body, 0, NULL) : NULL;
		st = j ? sr_jstr(j, "status") : NULL;
		c->kind = st && !strcmp(st, "DEACTIVATED") ? K_STOP : K_RESUME;
		if (!st || (strcmp(st, "DEACTIVATED") && strcmp(st, "ACTIVATED"))) {
			json_decref(j);
			*bad = "{\"errorCode\":\"10000024\",\"errorMessage\":\"Invalid status\"}";
			return 400;
		}
		json_decref(j);
	}
	p = MHD_lookup_connection_value(con, MHD_HEADER_KIND, "Idempotency-Key");
	snprintf(c->key, sizeof c->key, "%s", p ? p : "");
	user = MHD_basic_auth_get_username_password(con, &pw);
	id_copy(c->carrier, user);
	if (!c->carrier[0] || (key && (!pw || strcmp(pw, key))))
		c->v = V_AUTH;
	MHD_free(user);
	MHD_free(pw);
	return 0;
}

static void
answer_cisco(const struct call *c, struct answer *a)
{
	static const char *const status[] = { "ACTIVATED", "DEACTIVATED", "RETIRED" };
	static const struct {
		int http;
		const char *code, *message;
	} w[] = {
		[V_TOO_FREQUENT] = { 400, "30000009", "Too many status changes" },
		[V_RATE] = { 429, "40000029", "Rate limit exceeded" },
		[V_AUTH] = { 401, "10000001", "Invalid credentials or IP" },
		[V_BEARER] = { 401, "10000001", "Invalid credentials or IP" },
		[V_NOT_ALLOWED] = { 404, "20000001", "Invalid ICCID" },
		[V_INTERNAL] = { 500, "30000001", "Unknown server error" },
	};

	a->http = 200;
	if (c->kind == K_STATUS && c->v == V_OK) {
		a->code = state_name[c->said];
		snprintf(a->body, sizeof a->body, "{\"iccid\":\"%s\",\"status\":\"%s\"}", c->named,
		    status[c->said]);
	} else if (c->v == V_OK || c->v == V_ALREADY) {
		a->code = c->v == V_OK ? "OK" : "ALREADY";
		snprintf(a->body, sizeof a->body, "{\"iccid\":\"%s\"}", c->named);
	} else if (c->v == V_ACCEPTED) {
		a->http = 202, a->code = "ACCEPTED";
		snprintf(a->body, sizeof a->body, "{\"iccid\":\"%s\",\"status\":\"PENDING\"}", c->named);
	} else {
		a->http = w[c->v].http, a->code = w[c->v].code;
		a->retry_after = a->http == 429;
		snprintf(a->body, sizeof a->body, "{\"errorCode\":\"%s\",\"errorMessage\":\"%s\"}",
		    a->code, w[c->v].message);
	}
}

/* One query parameter of a request, decoded (MHD decodes them). */
struct qparam {
	const char *name, *value;
};

struct qparams {
	struct qparam v[64];
	int n, over;
};

static enum MHD_Result
qparam_add(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
	struct qparams *q = cls;

	(void)kind;
	if (!strcmp(key, "sign"))
		return MHD_YES;
	if (q->n == (int)(sizeof q->v / sizeof q->v[0])) {
		q->over = 1;
		return MHD_NO;
	}
	q->v[q->n].name = key;
	q->v[q->n++].value = value ? value : "";
	return MHD_YES;
}

static int
qparam_cmp(const void *a, const void *b)
{
	const struct qparam *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	return c ? c : strcmp(x->value, y->value);
}

/* A request's query parameters as a carrier signs them: every one but
 * "sign", decoded, sorted by name, then by value (byte order), joined as
 * "k=v&k=v", nothing encoded again: what the carrier computes on its
 * side, written here apart from srq's own. Its length (size: too many).
 * ctcmp: is the query string signed with --sign-key-file's key? sign is
 * the hex HMAC-SHA256 of that text. */
/* The signing key now, into out: --sign-key-file read again at each
 * request, so a test rotates it as a carrier would (unreadable for a
 * moment, as it is replaced: the last one read). */
static void
key_now(char *out, size_t n)
{
	FILE *f;
	char buf[512];
	size_t len;

	pthread_mutex_lock(&keymu);
	if ((f = fopen(sign_key_path, "r"))) {
		len = fread(buf, 1, sizeof buf - 1, f);
		fclose(f);
		while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == '\r'))
			len--;
		buf[len] = '\0';
		if (len) {
			free(sign_key);
			sign_key = sr_strdup(buf);
		}
	}
	snprintf(out, n, "%s", sign_key);
	pthread_mutex_unlock(&keymu);
}

static size_t
signed_params(struct MHD_Connection *con, char *text, size_t size)
{
	struct qparams q;
	size_t len = 0;

	memset(&q, 0, sizeof q);
	MHD_get_connection_values(con, MHD_GET_ARGUMENT_KIND, qparam_add, &q);
	if (q.over)
		return size;
	qsort(q.v, (size_t)q.n, sizeof q.v[0], qparam_cmp);
	text[0] = '\0';
	for (int i = 0; i < q.n && len < size; i++)
		len += (size_t)snprintf(text + len, size - len, "%s%s=%s", i ? "&" : "",
		    q.v[i].name, q.v[i].value);
	return len;
}

static int
ctcmp_signed(struct MHD_Connection *con)
{
	const char *sign = MHD_lookup_connection_value(con, MHD_GET_ARGUMENT_KIND, "sign");
	char text[8192], want[129], key[512];
	size_t len = signed_params(con, text, sizeof text);

	key_now(key, sizeof key);
	if (!sign || len >= sizeof text || sr_digest_hex(SR_SIGN_HMAC_SHA256, key,
	    strlen(key), text, len, 0, want) < 0)
		return 0;
	return !strcasecmp(sign, want);
}

/* China Telecom CMP-like shape (the older API): every call a GET to one
 * path, the account, its password and a signature in the query string:
 *   /m2m_ec/query.do?method=disabledNumber&user_id=&access_number=&orderTypeId=19|20&passWord=&sign=
 *   /m2m_ec/query.do?method=queryCardMainStatus&user_id=&access_number=&passWord=&sign=
 * (19 stop, 20 resume). The account is the user_id. A wrong signature or
 * password is refused alike. Returns 0, or the HTTP status of an answer
 * in *bad. */
static int
parse_ctcmp(struct MHD_Connection *con, const char *method, const char *url,
    const struct ctx *cx, struct call *c, const char **bad)
{
	const char *m = MHD_lookup_connection_value(con, MHD_GET_ARGUMENT_KIND, "method");
	const char *order = MHD_lookup_connection_value(con, MHD_GET_ARGUMENT_KIND, "orderTypeId");
	const char *pw = MHD_lookup_connection_value(con, MHD_GET_ARGUMENT_KIND, "passWord");

	(void)cx;
	*bad = "{\"code\":\"NOT_FOUND\"}";
	if (strcmp(method, "GET") || strcmp(url, "/m2m_ec/query.do"))
		return 404;
	*bad = "<?xml version=\"1.0\" encoding=\"UTF-8\"?><businessServiceResponse>"
	    "<resultCode>-1</resultCode><resultMsg>参数错误</resultMsg></businessServiceResponse>";
	if (m && !strcmp(m, "queryCardMainStatus"))
		c->kind = K_STATUS;
	else if (m && !strcmp(m, "disabledNumber") && order && !strcmp(order, "19"))
		c->kind = K_STOP;
	else if (m && !strcmp(m, "disabledNumber") && order && !strcmp(order, "20"))
		c->kind = K_RESUME;
	else
		return 200;
	id_copy(c->card, MHD_lookup_connection_value(con, MHD_GET_ARGUMENT_KIND, "access_number"));
	id_copy(c->carrier, MHD_lookup_connection_value(con, MHD_GET_ARGUMENT_KIND, "user_id"));
	if (!c->card[0] || !c->carrier[0])
		return 200;
	if (!ctcmp_signed(con) || (password && (!pw || strcmp(pw, password))))
		c->v = V_AUTH;
	if (!bearer_ok(con))
		c->v = V_BEARER;
	return 0;
}

static void
answer_ctcmp(const struct call *c, struct answer *a)
{
	static const struct {
		const char *code, *message;
	} w[] = {
		[V_OK] = { "0", "处理成功" },
		[V_ALREADY] = { "-3", "号码已是该状态" },
		[V_ACCEPTED] = { "0", "处理成功" },
		[V_TOO_FREQUENT] = { "-4", "操作过于频繁" },
		[V_RATE] = { "-6", "超过调用频率限制" },
		[V_AUTH] = { "-5", "签名或密码错误" },
		[V_NOT_ALLOWED] = { "-2", "号码状态不允许办理" },
	};
	/* 4 在用 (active), 5 停机 (stopped), 1 可激活 (not yet activated: the
	 * simulator's retired card, never to be changed by srq). */
	static const char *const main_status[] = { "4", "5", "1" };
	int n;

	if (answer_outside(c, a))
		return;
	a->type = "application/xml";
	a->code = w[c->v].code;
	n = snprintf(a->body, sizeof a->body, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>"
	    "<businessServiceResponse><resultCode>%s</resultCode><resultMsg>%s</resultMsg>",
	    a->code, w[c->v].message);
	if (c->kind == K_STATUS && c->v == V_OK) {
		a->code = state_name[c->said];
		snprintf(a->body + n, sizeof a->body - (size_t)n, "<access_number>%s</access_number>"
		    "<productMainStatusCd>%s</productMainStatusCd></businessServiceResponse>", c->named,
		    main_status[c->said]);
	} else if (c->v == V_ACCEPTED)
		snprintf(a->body + n, sizeof a->body - (size_t)n, "<access_number>%s</access_number>"
		    "<GROUP_TRANSACTIONID>%s</GROUP_TRANSACTIONID></businessServiceResponse>", c->named, c->txn);
	else if (c->v == V_OK || c->v == V_ALREADY)
		snprintf(a->body + n, sizeof a->body - (size_t)n, "<access_number>%s</access_number>"
		    "</businessServiceResponse>", c->named);
	else
		snprintf(a->body + n, sizeof a->body - (size_t)n, "</businessServiceResponse>");
}

/* China Telecom 5GCMP-like shape: every request a GET whose headers sign
 * it (AppKey: the account, Timestamp: ms, Sign: the upper-case hex MD5 of
 * the query parameters as signed_params joins them, then the app secret
 * (--sign-key-file), then the Timestamp), answered in XML inside HTTP 200:
 *   /5gcmp/openapi/v1/common/disabledNumberService?accessNumber=&orderTypeId=19|20
 *   /5gcmp/openapi/v1/prodinst/queryCardMainStatus?accessNumber=
 *   /5gcmp/openapi/v1/common/queryOrderStatus?groupTransactionId=
 * A change is an order (GROUP_TRANSACTIONID), which the order query
 * follows. */
static int
ct5g_signed(struct MHD_Connection *con)
{
	const char *sign = MHD_lookup_connection_value(con, MHD_HEADER_KIND, "Sign");
	const char *ts = MHD_lookup_connection_value(con, MHD_HEADER_KIND, "Timestamp");
	char text[8192], want[129], key[512];
	size_t len = signed_params(con, text, sizeof text);

	key_now(key, sizeof key);
	if (!sign || !ts || len >= sizeof text ||
	    (len += (size_t)snprintf(text + len, sizeof text - len, "%s%s", key, ts)) >= sizeof text ||
	    sr_digest_hex(SR_SIGN_MD5, NULL, 0, text, len, 1, want) < 0)
		return 0;
	return !strcmp(sign, want);
}

static int
parse_ct5gcmp(struct MHD_Connection *con, const char *method, const char *url,
    const struct ctx *cx, struct call *c, const char **bad)
{
	static const char prefix[] = "/5gcmp/openapi/v1/";
	const char *order = MHD_lookup_connection_value(con, MHD_GET_ARGUMENT_KIND, "orderTypeId");
	const char *txn = MHD_lookup_connection_value(con, MHD_GET_ARGUMENT_KIND, "groupTransactionId");
	const char *path = url + sizeof prefix - 1;

	(void)cx;
	*bad = "{\"code\":\"NOT_FOUND\"}";
	if (strcmp(method, "GET") || strncmp(url, prefix, sizeof prefix - 1))
		return 404;
	*bad = "<SvcCont><Response><RspType>1</RspType><RspCode>1001</RspCode>"
	    "<RspDesc>参数错误</RspDesc></Response></SvcCont>";
	if (!strcmp(path, "prodinst/queryCardMainStatus"))
		c->kind = K_STATUS;
	else if (!strcmp(path, "common/disabledNumberService") && order && !strcmp(order, "19"))
		c->kind = K_STOP;
	else if (!strcmp(path, "common/disabledNumberService") && order && !strcmp(order, "20"))
		c->kind = K_RESUME;
	else if (!strcmp(path, "common/queryOrderStatus") && txn && strlen(txn) < sizeof c->txn &&
	    sr_valid_id(txn)) {
		c->kind = K_ORDER;
		snprintf(c->txn, sizeof c->txn, "%s", txn);
	} else if (!strncmp(path, "common/", 7) || !strncmp(path, "prodinst/", 9))
		return 200;
	else
		return 404;
	if (c->kind != K_ORDER)
		id_copy(c->card, MHD_lookup_connection_value(con, MHD_GET_ARGUMENT_KIND, "accessNumber"));
	id_copy(c->carrier, MHD_lookup_connection_value(con, MHD_HEADER_KIND, "AppKey"));
	if ((c->kind != K_ORDER && !c->card[0]) || !c->carrier[0])
		return 200;
	if (!ct5g_signed(con))
		c->v = V_AUTH;
	if (!bearer_ok(con))
		c->v = V_BEARER;
	return 0;
}

static void
answer_ct5gcmp(const struct call *c, struct answer *a)
{
	static const struct {
		const char *code, *message;
	} w[] = {
		[V_OK] = { "0000", "成功" },
		[V_ALREADY] = { "0001", "号码已是该状态" },
		[V_ACCEPTED] = { "0000", "成功" },
		[V_TOO_FREQUENT] = { "1009", "操作过于频繁" },
		[V_RATE] = { "1010", "超过调用频率限制" },
		[V_AUTH] = { "1003", "签名错误" },
		[V_NOT_ALLOWED] = { "1002", "号码状态不允许办理" },
	};
	/* 4 在用 (active), 5 停机 (stopped), 1 可激活 (not yet activated: the
	 * simulator's retired card, never to be changed by srq). */
	static const char *const main_status[] = { "4", "5", "1" };
	const char *word;
	int n;

	if (answer_outside(c, a))
		return;
	a->type = "application/xml";
	if (c->kind == K_ORDER && c->v == V_NOT_ALLOWED) {
		a->code = "1004";
		snprintf(a->body, sizeof a->body, "<?xml version=\"1.0\" encoding=\"UTF-8\"?><SvcCont>"
		    "<Response><RspType>1</RspType><RspCode>1004</RspCode><RspDesc>订单不存在</RspDesc>"
		    "</Response></SvcCont>");
		return;
	}
	a->code = w[c->v].code;
	n = snprintf(a->body, sizeof a->body, "<?xml version=\"1.0\" encoding=\"UTF-8\"?><SvcCont>"
	    "<Response><RspType>%d</RspType><RspCode>%s</RspCode><RspDesc>%s</RspDesc></Response>",
	    strcmp(a->code, "0000") != 0, a->code, w[c->v].message);
	if (c->kind == K_ORDER && c->v == V_OK) {
		word = !strcmp(c->order, "done") ? "1" : !strcmp(c->order, "failed") ? "2" : "0";
		a->code = c->order;
		snprintf(a->body + n, sizeof a->body - (size_t)n, "<GROUP_TRANSACTIONID>%s</GROUP_TRANSACTIONID>"
		    "<accessNumber>%s</accessNumber><STATUSCD>%s</STATUSCD></SvcCont>", c->named_txn,
		    c->named, word);
	} else if (c->kind == K_STATUS && c->v == V_OK) {
		a->code = state_name[c->said];
		snprintf(a->body + n, sizeof a->body - (size_t)n, "<productInfo><accessNumber>%s</accessNumber>"
		    "<productMainStatusCd>%s</productMainStatusCd></productInfo></SvcCont>", c->named,
		    main_status[c->said]);
	} else if (c->v == V_ACCEPTED)
		snprintf(a->body + n, sizeof a->body - (size_t)n, "<accessNumber>%s</accessNumber>"
		    "<GROUP_TRANSACTIONID>%s</GROUP_TRANSACTIONID></SvcCont>", c->named, c->txn);
	else if (c->v == V_OK || c->v == V_ALREADY)
		snprintf(a->body + n, sizeof a->body - (size_t)n, "<accessNumber>%s</accessNumber></SvcCont>",
		    c->named);
	else
		snprintf(a->body + n, sizeof a->body - (size_t)n, "</SvcCont>");
}

static int
pending_before(const struct pending *a, const struct pending *b)
{
	return a->due < b->due || (a->due == b->due && a->n < b->n);
}

static void
pending_swap(size_t i, size_t j)
{
	struct pending t = pend[i];

	pend[i] = pend[j];
	pend[j] = t;
}

/* Accept a change to land async_ms from now; its txn goes into c (caller
 * holds mu). */
static void
schedule(struct call *c, enum state want, int fails)
{
	struct pending *p;
	struct order *o;
	size_t i;

	if (ntxn == capord) {
		capord = capord ? capord * 2 : 64;
		orders = sr_realloc(orders, capord * sizeof *orders);
	}
	o = &orders[ntxn++];
	snprintf(o->card, sizeof o->card, "%s", c->card);
	snprintf(o->carrier, sizeof o->carrier, "%s", c->carrier);
	o->due = now_ms() + async_ms;
	o->fails = fails;
	snprintf(c->txn, sizeof c->txn, "%c%lu", txn_prefix, ntxn);
	if (fails)
		return; /* accepted, and it will fail: nothing lands */
	if (npend == cappend) {
		cappend = cappend ? cappend * 2 : 64;
		pend = sr_realloc(pend, cappend * sizeof *pend);
	}
	p = &pend[i = npend++];
	memset(p, 0, sizeof *p);
	p->due = o->due;
	p->n = ntxn;
	p->state = want;
	snprintf(p->card, sizeof p->card, "%s", c->card);
	snprintf(p->carrier, sizeof p->carrier, "%s", c->carrier);
	snprintf(p->key, sizeof p->key, "%s", c->key);
	snprintf(p->txn, sizeof p->txn, "%s", c->txn);
	for (; i > 0 && pending_before(&pend[i], &pend[(i - 1) / 2]); i = (i - 1) / 2)
		pending_swap(i, (i - 1) / 2);
	pthread_cond_signal(&wake);
}

/* Take the earliest pending change off the heap into *p. */
static void
pending_pop(struct pending *p)
{
	size_t i = 0, l, m;

	*p = pend[0];
	pend[0] = pend[--npend];
	for (;;) {
		m = i;
		l = 2 * i + 1;
		if (l < npend && pending_before(&pend[l], &pend[m]))
			m = l;
		if (l + 1 < npend && pending_before(&pend[l + 1], &pend[m]))
			m = l + 1;
		if (m == i)
			break;
		pending_swap(i, m);
		i = m;
	}
}

/* Land every change due by now, each logged as an "apply" line stamped
 * with its due time (caller holds mu). */
static void
apply_due(int64_t now)
{
	struct pending p;
	struct call c;
	struct answer a;

	while (npend > 0 && pend[0].due <= now) {
		pending_pop(&p);
		memset(&c, 0, sizeof c);
		memset(&a, 0, sizeof a);
		c.kind = K_APPLY;
		snprintf(c.card, sizeof c.card, "%s", p.card);
		snprintf(c.carrier, sizeof c.carrier, "%s", p.carrier);
		snprintf(c.key, sizeof c.key, "%s", p.key);
		snprintf(c.txn, sizeof c.txn, "%s", p.txn);
		c.arrived = p.due;
		c.v = V_OK;
		c.state = card_get(p.card, p.carrier)->state = p.state;
		c.applied = 1;
		c.fault = "async";
		a.code = "APPLIED";
		log_call(&c, &a);
	}
}

/* The applier thread: lands pending changes on time, requests or not. */
static void *
applier(void *arg)
{
	struct timespec ts;

	(void)arg;
	pthread_mutex_lock(&mu);
	while (!stopping) {
		apply_due(now_ms());
		if (npend == 0) {
			pthread_cond_wait(&wake, &mu);
			continue;
		}
		ts.tv_sec = pend[0].due / 1000;
		ts.tv_nsec = pend[0].due % 1000 * 1000000;
		pthread_cond_timedwait(&wake, &mu, &ts);
	}
	pthread_mutex_unlock(&mu);
	return NULL;
}

/* A change call the carrier takes: the card's interval starts now, and
 * "already" is judged on the state the card will have once what is pending
 * has landed. The faults after applying strike here. */
static void
accept_change(struct call *c, struct card *k)
{
	enum state want = c->kind == K_STOP ? ST_STOPPED : ST_ACTIVE;

	k->last_change = c->arrived;
	c->v = V_ALREADY;
	if (k->will != want && async_ms > 0) {
		/* --fault-order-failed: accepted, then the order fails at the
		 * carrier: the card stays as it is. */
		int fails = porder_failed > 0 && coin() < porder_failed;

		if (!fails)
			k->will = want;
		else
			c->fault = "order_failed";
		c->v = V_ACCEPTED;
		schedule(c, want, fails);
	} else if (k->will != want) {
		k->state = k->will = want;
		c->v = V_OK, c->applied = 1;
	}
	if (p5xx_after > 0 && coin() < p5xx_after)
		c->v = V_INTERNAL, c->fault = "5xx_after";
	else if (pdrop_after > 0 && coin() < pdrop_after)
		c->drop = 1, c->fault = "drop_after";
	else if (ptimeout_after > 0 && coin() < ptimeout_after)
		c->slow = 1, c->fault = "timeout_after";
}

/* The carrier's decision on an admitted request, or a token fetch (caller
 * holds mu). The order is the carrier's: an account that is down fails
 * everything; the faults but that one hit change calls only. */
/* --fault-other-card: an answer that says how a card stands is another
 * card's (--other-card's, else the last card answered before it): crossed
 * answers. A query's then says the state of the card it names. */
static void
name_card(struct call *c)
{
	static char last[65];
	const struct card *k;

	snprintf(c->named, sizeof c->named, "%s", c->card);
	c->said = c->state;
	if (pother_card > 0 && (c->v == V_OK || c->v == V_ALREADY || c->v == V_ACCEPTED) &&
	    coin() < pother_card) {
		if (other_card[0])
			snprintf(c->named, sizeof c->named, "%s", other_card);
		else if (last[0] && strcmp(last, c->card))
			snprintf(c->named, sizeof c->named, "%s", last);
		else
			snprintf(c->named, sizeof c->named, "%.60s-0", c->card);
		if (c->kind == K_STATUS)
			c->said = card_get(c->named, c->carrier)->state;
		if (!c->fault)
			c->fault = "other_card";
	}
	/* A carrier whose status answers say a change is on its way: what it
	 * says until the change lands. */
	if (c->kind == K_STATUS && pending_state) {
		k = card_get(c->named, c->carrier);
		c->said_pending = k->will != k->state;
	}
	snprintf(last, sizeof last, "%s", c->card);
}

/* The order a txn names (this run's T<n>, or J<n>: its number n), or NULL
 * (caller holds mu). */
static struct order *
order_get(const char *txn, unsigned long *n)
{
	char *end;
	unsigned long v;

	if (txn[0] != txn_prefix || !isdigit((unsigned char)txn[1]))
		return NULL;
	v = strtoul(txn + 1, &end, 10);
	if (*end || v == 0 || v > ntxn)
		return NULL;
	*n = v;
	return &orders[v - 1];
}

/* How an order stands now: pending until it lands (or fails). */
static const char *
order_word(const struct order *o, int64_t now)
{
	return now < o->due ? "pending" : o->fails ? "failed" : "done";
}

/* An order status query: the account's own order, or none (not allowed:
 * the shape's "no such order"). --fault-other-order: the answer is
 * another order's (the one before it), as a carrier mixing up a card's
 * orders would answer; its card is still the one asked. */
static void
decide_order(struct call *c)
{
	unsigned long n;
	struct order *o = order_get(c->txn, &n);
	int64_t now = now_ms();

	if (!o || strcmp(o->carrier, c->carrier)) {
		c->v = V_NOT_ALLOWED;
		return;
	}
	c->v = V_OK;
	snprintf(c->card, sizeof c->card, "%s", o->card);
	snprintf(c->named_txn, sizeof c->named_txn, "%s", c->txn);
	c->order = order_word(o, now);
	if (pother_order > 0 && ntxn > 1 && coin() < pother_order) {
		unsigned long other = n == 1 ? 2 : n - 1;

		snprintf(c->named_txn, sizeof c->named_txn, "%c%lu", txn_prefix, other);
		c->order = order_word(&orders[other - 1], now);
		c->fault = "other_order";
	}
}

static void
decide(struct call *c)
{
	struct card *k;

	if (c->kind == K_TOKEN) {
		token_issue(c);
		c->v = V_OK;
		return;
	}
	if (c->kind == K_ORDER) {
		if (fail_account[0] && !strcmp(fail_account, c->carrier))
			c->v = V_INTERNAL, c->fault = "account_down";
		else
			decide_order(c);
		return;
	}
	k = card_get(c->card, c->carrier);
	if (fail_account[0] && !strcmp(fail_account, c->carrier)) {
		c->v = V_INTERNAL, c->fault = "account_down";
	} else if (c->kind == K_STATUS) {
		c->v = V_OK;
	} else if (p429 > 0 && coin() < p429) {
		c->v = V_RATE, c->fault = "429";
	} else if (k->state == ST_RETIRED) {
		c->v = V_NOT_ALLOWED;
	} else if (preject > 0 && coin() < preject) {
		c->v = V_NOT_ALLOWED, c->fault = "reject";
	} else if (p5xx_before > 0 && coin() < p5xx_before) {
		c->v = V_INTERNAL, c->fault = "5xx_before";
	} else if (interval_ms > 0 && k->last_change && c->arrived - k->last_change < interval_ms) {
		c->v = V_TOO_FREQUENT;
	} else
		accept_change(c, k);
}

/* What POST /_sim/set asks: each member is set only if given. */
struct setting {
	int bad, has_qps, has_fail, has_ttl, has_order_failed;
	long qps, token_ttl_ms;
	double order_failed;
	char fail_account[65];
};

static enum MHD_Result
setting_arg(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
	struct setting *st = cls;

	(void)kind;
	if (!strcmp(key, "qps")) {
		st->has_qps = 1;
		st->bad |= (st->qps = sr_parse_long(value)) < 0;
	} else if (!strcmp(key, "token_ttl_ms")) {
		st->has_ttl = 1;
		st->bad |= (st->token_ttl_ms = sr_parse_long(value)) < 0;
	} else if (!strcmp(key, "order_failed")) {
		char *end;

		st->has_order_failed = 1;
		st->order_failed = value ? strtod(value, &end) : -1;
		st->bad |= !value || *end || !(st->order_failed >= 0 && st->order_failed <= 1);
	} else if (!strcmp(key, "fail_account")) {
		st->has_fail = 1;
		value = value ? value : "";
		st->bad |= *value && !sr_valid_id(value);
		snprintf(st->fail_account, sizeof st->fail_account, "%s", value);
	} else
		st->bad = 1;
	return MHD_YES;
}

/* The tests' control: POST /_sim/set?qps=N&fail_account=ID&token_ttl_ms=N&order_failed=P
 * changes the carrier mid-run; a new TTL applies to the tokens already
 * issued too (expiry is judged when a token is used). Neither logged nor
 * counted: it is not a call. All or nothing: a bad or unknown parameter
 * changes nothing. */
static enum MHD_Result
control(struct MHD_Connection *con, const char *method, const char *url)
{
	struct setting st;

	if (strcmp(method, "POST") || strcmp(url, "/_sim/set"))
		return reply(con, 404, "{\"code\":\"NOT_FOUND\"}", 0);
	memset(&st, 0, sizeof st);
	MHD_get_connection_values(con, MHD_GET_ARGUMENT_KIND, setting_arg, &st);
	if (st.bad || !(st.has_qps || st.has_fail || st.has_ttl || st.has_order_failed))
		return reply(con, 400, "{\"ok\":false}", 0);
	pthread_mutex_lock(&mu);
	if (st.has_qps)
		qps = st.qps;
	if (st.has_fail)
		snprintf(fail_account, sizeof fail_account, "%s", st.fail_account);
	if (st.has_ttl)
		token_ttl_ms = st.token_ttl_ms;
	if (st.has_order_failed)
		porder_failed = st.order_failed;
	pthread_mutex_unlock(&mu);
	return reply(con, 200, "{\"ok\":true}", 0);
}

/* Each API shape: what a request asks, and how a verdict is said. */
static const struct shape {
	int (*parse)(struct MHD_Connection *, const char *, const char *, const struct ctx *,
	    struct call *, const char **);
	void (*answer)(const struct call *, struct answer *);
} shapes[] = {
	[PR_DEFAULT] = { parse_default, answer_default },
	[PR_ONELINK] = { parse_onelink, answer_onelink },
	[PR_CISCO] = { parse_cisco, answer_cisco },
	[PR_CTCMP] = { parse_ctcmp, answer_ctcmp },
	[PR_CT5GCMP] = { parse_ct5gcmp, answer_ct5gcmp },
};

/* Handle a complete request. Returns MHD_NO to drop the connection. */
static enum MHD_Result
handle(struct MHD_Connection *con, const char *method, const char *url, struct ctx *cx)
{
	struct call c;
	struct answer a;
	const char *bad;
	int http, admitted = 0;
	enum MHD_Result ret;

	if (!strncmp(url, "/_sim/", 6))
		return control(con, method, url);
	memset(&c, 0, sizeof c);
	memset(&a, 0, sizeof a);
	c.arrived = cx->arrived;
	if ((http = shapes[profile].parse(con, method, url, cx, &c, &bad)))
		return reply(con, http, bad, 0);

	/* Token fetches are not calls: neither rated nor in flight. */
	pthread_mutex_lock(&mu);
	if (c.v == V_NONE && c.kind != K_TOKEN) {
		if ((c.fault = admit(c.carrier, c.arrived)))
			c.v = V_RATE;
		else
			admitted = 1;
	}
	pthread_mutex_unlock(&mu);

	if (latency_ms > 0)
		sr_sleep_ms(latency_ms);

	pthread_mutex_lock(&mu);
	apply_due(now_ms()); /* what is due has landed, even if the applier is late */
	if (c.v == V_NONE)
		decide(&c);
	if (c.kind != K_TOKEN && c.card[0]) { /* (an order not found has no card) */
		c.state = card_get(c.card, c.carrier)->state;
		name_card(&c);
	}
	shapes[profile].answer(&c, &a);
	log_call(&c, &a);
	pthread_mutex_unlock(&mu);

	ret = MHD_NO;
	if (!c.drop) {
		if (c.slow)
			sr_sleep_ms(slow_ms);
		ret = reply_as(con, a.http, a.type, a.body, a.retry_after);
	}
	if (admitted)
		release(c.carrier);
	return ret;
}

/* A TCP connection: when it was accepted, and whether a request of it has
 * arrived yet (MHD's socket context). The monotonic clock, to the
 * nanosecond: a handshake measured in whole wall-clock milliseconds could
 * end up to a millisecond early, or far off when the wall clock is set. */
struct sock {
	struct timespec accepted;
	int served;
};

static void
on_connection(void *cls, struct MHD_Connection *con, void **sock_ctx,
    enum MHD_ConnectionNotificationCode toe)
{
	struct sock *s;

	(void)cls;
	(void)con;
	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		s = sr_malloc(sizeof *s);
		clock_gettime(CLOCK_MONOTONIC, &s->accepted);
		s->served = 0;
		*sock_ctx = s;
	} else {
		free(*sock_ctx);
		*sock_ctx = NULL;
	}
}

/* What stands between a client's send and the carrier's clock: the first
 * request of a connection arrives only once a handshake of --conn-delay-ms
 * is over, and every request is up to --jitter-ms late on the way. A client
 * pacing its sends to the rate still gets refused when these bunch its
 * arrivals together, as with a real carrier. */
static void
arrive(struct MHD_Connection *con)
{
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(con, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	struct sock *s = ci ? ci->socket_context : NULL;
	int64_t jitter = 0;

	if (s && !s->served && conn_delay_ms > 0) {
		/* An absolute deadline: a handshake long over costs nothing. */
		struct timespec until = s->accepted;

		until.tv_sec += conn_delay_ms / 1000;
		until.tv_nsec += (conn_delay_ms % 1000) * 1000000;
		if (until.tv_nsec >= 1000000000) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000;
		}
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL) == EINTR)
			;
	}
	if (s)
		s->served = 1;
	if (jitter_ms > 0) {
		pthread_mutex_lock(&mu);
		jitter = rand_r(&jitter_seed) % (jitter_ms + 1);
		pthread_mutex_unlock(&mu);
	}
	sr_sleep_ms(jitter);
}

static enum MHD_Result
on_request(void *cls, struct MHD_Connection *con, const char *url, const char *method,
    const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
	struct ctx *cx = *con_cls;

	(void)cls;
	(void)version;
	if (!cx) {
		cx = sr_malloc(sizeof *cx);
		memset(cx, 0, sizeof *cx);
		if (strncmp(url, "/_sim/", 6) != 0)
			arrive(con);
		cx->arrived = now_ms(); /* the carrier measures arrivals */
		*con_cls = cx;
		return MHD_YES;
	}
	if (*upload_size) {
		if (cx->len + *upload_size < 65536) {
			cx->body = sr_realloc(cx->body, cx->len + *upload_size + 1);
			memcpy(cx->body + cx->len, upload, *upload_size);
			cx->len += *upload_size;
			cx->body[cx->len] = '\0';
		}
		*upload_size = 0;
		return MHD_YES;
	}
	return handle(con, method, url, cx);
}

static void
on_done(void *cls, struct MHD_Connection *con, void **con_cls, enum MHD_RequestTerminationCode tc)
{
	struct ctx *cx = *con_cls;

	(void)cls;
	(void)con;
	(void)tc;
	if (cx) {
		free(cx->body);
		free(cx);
	}
	*con_cls = NULL;
}

static void
load_cards(const char *path)
{
	FILE *f = fopen(path, "r");
	char line[1024];
	long n = 0;
	int state;
	struct card *k;

	if (!f)
		sr_die(SR_EX_USAGE, "--cards: cannot open '%s':", path);
	while (fgets(line, sizeof line, f)) {
		json_t *j = json_loads(line, 0, NULL);
		const char *id = j ? sr_jstr(j, "card") : NULL, *st = j ? sr_jstr(j, "status") : NULL;

		n++;
		if (!sr_valid_id(id))
			sr_die(SR_EX_USAGE, "--cards: line %ld: missing or bad \"card\"", n);
		if ((state = st ? state_parse(st) : ST_ACTIVE) < 0)
			sr_die(SR_EX_USAGE, "--cards: line %ld: unknown \"status\" '%s'", n, st);
		k = card_get(id, sr_jstr(j, "carrier") ? sr_jstr(j, "carrier") : "");
		k->state = k->will = (enum state)state;
		json_decref(j);
	}
	fclose(f);
}

static double
prob(const char *opt, const char *s)
{
	char *end;
	double p = strtod(s, &end);

	if (*end || p < 0 || p > 1)
		sr_die(SR_EX_USAGE, "%s: '%s' is not a probability between 0 and 1", opt, s);
	return p;
}

static long
num(const char *opt, const char *s)
{
	long v = sr_parse_long(s);

	if (v < 0)
		sr_die(SR_EX_USAGE, "%s: '%s' is not a non-negative integer", opt, s);
	return v;
}

/* A secret from a file, without its trailing newline (never from argv). */
static char *
secret(const char *opt, const char *path)
{
	FILE *f = fopen(path, "r");
	char buf[512];
	size_t n;

	if (!f)
		sr_die(SR_EX_USAGE, "%s: cannot open '%s':", opt, path);
	n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		n--;
	buf[n] = '\0';
	return sr_strdup(buf);
}

/* The index of s in names[n], or die. */
static int
word(const char *opt, const char *s, const char *const *names, int n)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(s, names[i]))
			return i;
	sr_die(SR_EX_USAGE, "%s: '%s' is not one of the choices (see --help)", opt, s);
}

int
main(int argc, char *argv[])
{
	enum { O_PORT = 1, O_PORTFILE, O_LOG, O_QPS, O_INTERVAL, O_CARDS, O_LATENCY, O_429,
		O_5XXB, O_5XXA, O_DROP, O_TIMEOUT, O_SEED, O_TOKEN, O_SLOW, O_REJECT,
		O_RETRY_AFTER, O_FAIL_ACCOUNT, O_THROTTLE_BODY, O_RATE_MODE, O_BURST,
		O_MAX_INFLIGHT, O_CONN_DELAY, O_JITTER, O_ASYNC, O_PASSWORD, O_TOKEN_TTL,
		O_PROFILE, O_OTHER_CARD, O_OTHER_ID, O_SIGN_KEY, O_PENDING_STATE,
		O_ORDER_FAILED, O_OTHER_ORDER };
	static const struct option longopts[] = {
		{ "port", required_argument, NULL, O_PORT },
		{ "port-file", required_argument, NULL, O_PORTFILE },
		{ "log", required_argument, NULL, O_LOG },
		{ "qps", required_argument, NULL, O_QPS },
		{ "interval-ms", required_argument, NULL, O_INTERVAL },
		{ "cards", required_argument, NULL, O_CARDS },
		{ "latency-ms", required_argument, NULL, O_LATENCY },
		{ "fault-429", required_argument, NULL, O_429 },
		{ "fault-reject", required_argument, NULL, O_REJECT },
		{ "fault-5xx-before", required_argument, NULL, O_5XXB },
		{ "fault-5xx-after", required_argument, NULL, O_5XXA },
		{ "fault-other-card", required_argument, NULL, O_OTHER_CARD },
		{ "other-card", required_argument, NULL, O_OTHER_ID },
		{ "fault-drop-after", required_argument, NULL, O_DROP },
		{ "fault-timeout-after", required_argument, NULL, O_TIMEOUT },
		{ "slow-ms", required_argument, NULL, O_SLOW },
		{ "retry-after", required_argument, NULL, O_RETRY_AFTER },
		{ "fail-account", required_argument, NULL, O_FAIL_ACCOUNT },
		{ "throttle-in-body", no_argument, NULL, O_THROTTLE_BODY },
		{ "rate-mode", required_argument, NULL, O_RATE_MODE },
		{ "burst", required_argument, NULL, O_BURST },
		{ "max-inflight", required_argument, NULL, O_MAX_INFLIGHT },
		{ "conn-delay-ms", required_argument, NULL, O_CONN_DELAY },
		{ "jitter-ms", required_argument, NULL, O_JITTER },
		{ "async-ms", required_argument, NULL, O_ASYNC },
		{ "pending-state", required_argument, NULL, O_PENDING_STATE },
		{ "fault-order-failed", required_argument, NULL, O_ORDER_FAILED },
		{ "fault-other-order", required_argument, NULL, O_OTHER_ORDER },
		{ "password-file", required_argument, NULL, O_PASSWORD },
		{ "sign-key-file", required_argument, NULL, O_SIGN_KEY },
		{ "token-ttl-ms", required_argument, NULL, O_TOKEN_TTL },
		{ "profile", required_argument, NULL, O_PROFILE },
		{ "seed", required_argument, NULL, O_SEED },
		{ "token-file", required_argument, NULL, O_TOKEN },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, SR_OPT_VERSION },
		{ NULL, 0, NULL, 0 },
	};
	const char *portfile = NULL, *logpath = NULL, *cardsfile = NULL;
	long port = 8080;
	struct sockaddr_in addr;
	struct MHD_Daemon *d;
	pthread_t applier_thread;
	sigset_t sigs;
	int c, sig, slow;

	sr_prog = "sr-gwsim";
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case O_PORT: port = num("--port", optarg); break;
		case O_PORTFILE: portfile = optarg; break;
		case O_LOG: logpath = optarg; break;
		case O_QPS: qps = num("--qps", optarg); break;
		case O_INTERVAL: interval_ms = num("--interval-ms", optarg); break;
		case O_CARDS: cardsfile = optarg; break;
		case O_LATENCY: latency_ms = num("--latency-ms", optarg); break;
		case O_429: p429 = prob("--fault-429", optarg); break;
		case O_REJECT: preject = prob("--fault-reject", optarg); break;
		case O_5XXB: p5xx_before = prob("--fault-5xx-before", optarg); break;
		case O_5XXA: p5xx_after = prob("--fault-5xx-after", optarg); break;
		case O_OTHER_CARD: pother_card = prob("--fault-other-card", optarg); break;
		case O_ORDER_FAILED: porder_failed = prob("--fault-order-failed", optarg); break;
		case O_OTHER_ORDER: pother_order = prob("--fault-other-order", optarg); break;
		case O_OTHER_ID:
			if (!sr_valid_id(optarg))
				sr_die(SR_EX_USAGE, "--other-card: not a card id [A-Za-z0-9_.-]{1,64}");
			snprintf(other_card, sizeof other_card, "%s", optarg);
			break;
		case O_DROP: pdrop_after = prob("--fault-drop-after", optarg); break;
		case O_TIMEOUT: ptimeout_after = prob("--fault-timeout-after", optarg); break;
		case O_SLOW: slow_ms = num("--slow-ms", optarg); break;
		case O_RETRY_AFTER: retry_after_s = num("--retry-after", optarg); break;
		case O_FAIL_ACCOUNT:
			if (!sr_valid_id(optarg))
				sr_die(SR_EX_USAGE, "--fail-account: '%s' is not an account id", optarg);
			snprintf(fail_account, sizeof fail_account, "%s", optarg);
			break;
		case O_THROTTLE_BODY: throttle_in_body = 1; break;
		case O_RATE_MODE:
			rate_mode = (enum rate_mode)word("--rate-mode", optarg, rate_mode_name, 3);
			break;
		case O_BURST:
			if ((burst = num("--burst", optarg)) < 1)
				sr_die(SR_EX_USAGE, "--burst: must be at least 1");
			break;
		case O_MAX_INFLIGHT: max_inflight = num("--max-inflight", optarg); break;
		case O_CONN_DELAY: conn_delay_ms = num("--conn-delay-ms", optarg); break;
		case O_JITTER: jitter_ms = num("--jitter-ms", optarg); break;
		case O_ASYNC: async_ms = num("--async-ms", optarg); break;
		case O_PENDING_STATE:
			/* (it goes into a JSON body as it is) */
			if (strlen(optarg) > 32 || !sr_valid_id(optarg))
				sr_die(SR_EX_USAGE, "--pending-state: not a state name [A-Za-z0-9_.-]{1,32}");
			pending_state = optarg;
			break;
		case O_SEED: seed = (unsigned)num("--seed", optarg); break;
		case O_TOKEN:
			free(token);
			token = secret("--token-file", optarg);
			break;
		case O_PASSWORD:
			free(password);
			password = secret("--password-file", optarg);
			break;
		case O_SIGN_KEY:
			free(sign_key);
			sign_key = secret("--sign-key-file", optarg);
			sign_key_path = optarg;
			break;
		case O_TOKEN_TTL: token_ttl_ms = num("--token-ttl-ms", optarg); break;
		case O_PROFILE:
			profile = (enum profile)word("--profile", optarg, profile_name,
			    sizeof profile_name / sizeof profile_name[0]);
			break;
		case SR_OPT_VERSION: printf("sr-gwsim %s\n", SR_VERSION); return 0;
		case 'h': fputs(usage, stdout); return 0;
		default: sr_usage(SR_EX_USAGE, usage);
		}
	}
	jitter_seed = seed ^ 0x5bd1e995u;
	if (profile == PR_ONELINK)
		txn_prefix = 'J';
	if ((profile == PR_CTCMP || profile == PR_CT5GCMP) && !sign_key)
		sr_die(SR_EX_USAGE, "--profile %s needs --sign-key-file: it checks every "
		    "request's signature", profile_name[profile]);
	if (profile == PR_CISCO && token && password)
		sr_die(SR_EX_USAGE, "--profile cisco: the API key is --password-file or "
		    "--token-file, not both");
	if (port > 65535)
		sr_die(SR_EX_USAGE, "--port: %ld is out of range", port);
	logf = stderr;
	if (logpath && !(logf = fopen(logpath, "a")))
		sr_die(SR_EX_USAGE, "--log: cannot open '%s':", logpath);
	if (cardsfile)
		load_cards(cardsfile);

	/* Signals are taken by sigwait below, not by the server threads. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (async_ms > 0 && (errno = pthread_create(&applier_thread, NULL, applier, NULL)))
		sr_die(SR_EX_BACKEND, "cannot start the applier thread:");

	memset(&addr, 0, sizeof addr);
	addr.sin_family = AF_INET;
	addr.sin_port = htons((uint16_t)port);
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	/* Handlers that sleep (arrival delays, latency, slow answers) need a
	 * thread each, or one slow call would hold up every other call of its
	 * thread; otherwise a small pool of event-driven threads is far cheaper
	 * per connection. */
	slow = latency_ms > 0 || ptimeout_after > 0 || conn_delay_ms > 0 || jitter_ms > 0;
	d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD |
	    (slow ? MHD_USE_THREAD_PER_CONNECTION : MHD_USE_EPOLL),
	    (uint16_t)port, NULL, NULL, on_request, NULL,
	    MHD_OPTION_THREAD_POOL_SIZE, (unsigned)(slow ? 0 : 2),
	    MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
	    MHD_OPTION_NOTIFY_COMPLETED, on_done, NULL,
	    MHD_OPTION_NOTIFY_CONNECTION, on_connection, NULL,
	    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)60,
	    MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned)1024,
	    MHD_OPTION_END);
	if (!d)
		sr_die(SR_EX_BACKEND, "cannot listen on 127.0.0.1:%ld", port);
	if (portfile) {
		const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
		char tmp[4096];
		FILE *f;

		snprintf(tmp, sizeof tmp, "%s.tmp", portfile);
		if (!(f = fopen(tmp, "w")))
			sr_die(SR_EX_USAGE, "--port-file: cannot write '%s':", tmp);
		fprintf(f, "%u\n", info ? info->port : (unsigned)port);
		fclose(f);
		rename(tmp, portfile); /* readers never see a half-written file */
	}
	sigwait(&sigs, &sig);
	MHD_stop_daemon(d);
	if (async_ms > 0) {
		pthread_mutex_lock(&mu);
		stopping = 1;
		pthread_cond_signal(&wake);
		pthread_mutex_unlock(&mu);
		pthread_join(applier_thread, NULL);
	}
	pthread_mutex_lock(&mu);
	free(pend);
	free(orders);
	if (logf != stderr)
		fclose(logf);
	free(cards);
	for (int i = 0; i < naccounts; i++)
		free(accounts[i].arrivals);
	free(accounts);
	free(tokens);
	free(token);
	free(password);
	free(sign_key);
	pthread_mutex_unlock(&mu);
	return 0;
}
