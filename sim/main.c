/* sr-gwsim - a carrier gateway simulator for the demo, the tests and the benchmarks.
 *
 * Speaks the gateway contract (the default profile: see docs/carriers.md,
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
 * It speaks one of five API shapes (--profile): the default one above,
 * OneLink's (China Mobile: tokens, status codes in 200 bodies), Cisco
 * Control Center's (Basic auth, PUT a device's status), the older China
 * Telecom CMP's (GET, a signed query string) or its 5GCMP's (GET, signed
 * in headers). A request goes
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
 *
 * This file reads the options, starts the carrier and stops it on a
 * signal; gwsim.h says which file does the rest.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "gwsim.h"

/* The settings (gwsim.h says what each is). */
pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
const struct shape *shape = &shape_default;
FILE *log_file;
long qps, interval_ms, latency_ms, slow_ms = 15000, retry_after_s = 1;
enum rate_mode rate_mode;
long burst = -1;
long max_inflight;
double p429, preject, p5xx_before, p5xx_after, pdrop_after, ptimeout_after, pother_card;
double porder_failed, pother_order;
int throttle_in_body;
char other_card[65];
unsigned seed = 1, jitter_seed;
long conn_delay_ms, jitter_ms;
long async_ms;
const char *pending_state;
char *token;
char *password;
char *sign_key;
const char *sign_key_path;
long token_ttl_ms;
char fail_account[65];

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
	struct MHD_Daemon *d;
	sigset_t sigs;
	int c, sig;

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
			if (!(shape = shape_find(optarg)))
				sr_die(SR_EX_USAGE, "--profile: '%s' is not one of the choices "
				    "(see --help)", optarg);
			break;
		case SR_OPT_VERSION: printf("sr-gwsim %s\n", SR_VERSION); return 0;
		case 'h': fputs(usage, stdout); return 0;
		default: sr_usage(SR_EX_USAGE, usage);
		}
	}
	jitter_seed = seed ^ 0x5bd1e995u;
	if (shape->setup)
		shape->setup();
	if (port > 65535)
		sr_die(SR_EX_USAGE, "--port: %ld is out of range", port);
	log_file = stderr;
	if (logpath && !(log_file = fopen(logpath, "a")))
		sr_die(SR_EX_USAGE, "--log: cannot open '%s':", logpath);
	if (cardsfile)
		load_cards(cardsfile);

	/* Signals are taken by sigwait below, not by the server threads. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (async_ms > 0 && (errno = applier_start()))
		sr_die(SR_EX_BACKEND, "cannot start the applier thread:");

	if (!(d = serve(port)))
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
	if (async_ms > 0)
		applier_stop();
	pthread_mutex_lock(&mu);
	applier_free();
	if (log_file != stderr)
		fclose(log_file);
	cards_free();
	accounts_free();
	tokens_free();
	free(token);
	free(password);
	free(sign_key);
	pthread_mutex_unlock(&mu);
	return 0;
}
