/* sr_config.c - configuration from flags and the environment.
 * Secrets (Redis password, gateway token) are read only from the environment
 * or from files named there, never from argv, and are never printed; and
 * only by the tool about to use one, when it does (sr_secret.c). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include <curl/curl.h>

#include "sr.h"

long
sr_parse_long(const char *s)
{
	char *end;
	long v;

	if (!s || !*s || *s == '-' || *s == '+')
		return -1;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end)
		return -1;
	return v;
}

long
sr_num(const char *name, const char *s, long lo, long hi)
{
	long v = sr_parse_long(s);

	if (v < lo || v > hi)
		sr_die(SR_EX_USAGE, "%s: '%s' is not a whole number from %ld to %ld", name, s ? s : "",
		    lo, hi);
	return v;
}

/* A bounded number from the environment (empty or unset: dflt). */
static long
env_long(const char *name, long dflt, long lo, long hi)
{
	const char *s = getenv(name);

	if (!s || !*s)
		return dflt;
	return sr_num(name, s, lo, hi);
}

static const char *
env_str(const char *name, const char *dflt)
{
	const char *s = getenv(name);

	return s && *s ? s : dflt;
}

/* What state a secret file is in, for sr-admin config: told from its
 * metadata and the permission bits the kernel would apply (faccessat, as
 * the effective user), never opened: config shows a secret's state, and
 * reads nothing it does not print. */
static const char *
secret_file_state(const char *path, char *out, size_t n)
{
	struct stat st;

	if (stat(path, &st) != 0)
		snprintf(out, n, "%s: %s", errno == ENOENT || errno == ENOTDIR ? "missing" : "unreadable",
		    strerror(errno));
	else if (S_ISDIR(st.st_mode))
		snprintf(out, n, "unreadable: %s", strerror(EISDIR));
	else if (faccessat(AT_FDCWD, path, R_OK, AT_EACCESS) != 0)
		snprintf(out, n, "unreadable: %s", strerror(errno));
	else if (S_ISREG(st.st_mode) && st.st_size == 0)
		snprintf(out, n, "empty");
	else
		snprintf(out, n, "readable");
	return out;
}

enum { SECRET = 1, SECRET_FILE };

/* The settings a config file may hold: the environment's names. Secrets
 * only as *_FILE (a path): a config file is no place for a password. */
static const struct setting {
	const char *name, *dflt;
	int secret; /* SECRET: redacted in sr-admin config; SECRET_FILE: names one */
} settings[] = {
	{ "SRQ_REDIS", "redis://127.0.0.1:6379/0", 0 }, { "SRQ_PREFIX", "polling", 0 },
	{ "SRQ_GATEWAY", "http://127.0.0.1:8080", 0 },
	{ "SRQ_REDIS_PASSWORD", "", SECRET }, { "SRQ_REDIS_PASSWORD_FILE", "", SECRET_FILE },
	{ "SRQ_GATEWAY_TOKEN", "", SECRET }, { "SRQ_GATEWAY_TOKEN_FILE", "", SECRET_FILE },
	{ "SRQ_MIN_INTERVAL_MS", "600000", 0 }, { "SRQ_QPS", "10", 0 }, { "SRQ_MAX_RUNNING", "20", 0 },
	{ "SRQ_LEASE_MS", "60000", 0 }, { "SRQ_RATE_WINDOW_MS", "1020", 0 },
	{ "SRQ_GATEWAY_TIMEOUT_MS", "10000", 0 }, { "SRQ_GATEWAY_CONNECT_TIMEOUT_MS", "3000", 0 },
	{ "SRQ_ALERT_AFTER", "3", 0 }, { "SRQ_FREEZE_AFTER", "10", 0 }, { "SRQ_CONCURRENCY", "64", 0 },
	{ "SRQ_AUDIT_MAXLEN", "100000", 0 }, { "SRQ_AUDIT_DAYS", "30", 0 }, { "SRQ_RATE_BURST", "1", 0 },
	{ "SRQ_CONFIRM_DELAY_MS", "2000", 0 }, { "SRQ_WAIT_REPLICAS", "0", 0 },
	{ "SRQ_WAIT_TIMEOUT_MS", "1000", 0 }, { "SRQ_REDIS_TIMEOUT_MS", "15000", 0 },
	{ "SRQ_PROFILES", "", 0 }, { "SRQ_UNLIMITED", "0", 0 },
	{ NULL, NULL, 0 },
};
static char from_file[sizeof settings / sizeof settings[0]][300]; /* "FILE:LINE" */
static const char *config_path;

/* SRQ_CONFIG, or /etc/srq/srq.conf when it exists: "NAME = value" lines
 * (blank lines and # comments skipped) that fill in what the environment
 * leaves unset, so cron and an interactive shell see the same settings.
 * The environment overrides the file, flags override both. */
static void
load_config_file(void)
{
	const char *path = getenv("SRQ_CONFIG");
	char line[1024];
	FILE *f;
	int no = 0;

	if (path && !*path)
		return; /* SRQ_CONFIG= : no file */
	if (!path) {
		path = "/etc/srq/srq.conf";
		if (access(path, F_OK) != 0)
			return;
	}
	if (!(f = fopen(path, "r")))
		sr_die(SR_EX_USAGE, "SRQ_CONFIG: cannot open '%s':", path);
	config_path = path;
	while (fgets(line, sizeof line, f)) {
		char *k = line, *eq, *v, *end;
		int i;

		no++;
		if (!strchr(line, '\n') && !feof(f))
			sr_die(SR_EX_USAGE, "%s: line %d: longer than %zu bytes", path, no, sizeof line - 2);
		while (*k == ' ' || *k == '\t')
			k++;
		if (*k == '#' || *k == '\n' || *k == '\r' || !*k)
			continue;
		if (!(eq = strchr(k, '=')))
			sr_die(SR_EX_USAGE, "%s: line %d: expected NAME = value", path, no);
		for (end = eq; end > k && (end[-1] == ' ' || end[-1] == '\t'); end--)
			;
		*end = '\0';
		for (v = eq + 1; *v == ' ' || *v == '\t'; v++)
			;
		for (end = v + strlen(v); end > v && strchr(" \t\r\n", end[-1]); end--)
			;
		*end = '\0';
		for (i = 0; settings[i].name && strcmp(settings[i].name, k); i++)
			;
		if (!settings[i].name)
			sr_die(SR_EX_USAGE, "%s: line %d: unknown setting '%s'", path, no, k);
		if (settings[i].secret == SECRET)
			sr_die(SR_EX_USAGE, "%s: line %d: %s does not belong in a config file: put it in a "
			    "file of its own (mode 600) and set %s_FILE", path, no, k, k);
		if (getenv(k))
			continue; /* the environment wins */
		if (setenv(k, v, 0) != 0)
			sr_die(SR_EX_USAGE, "%s: line %d: cannot set %s:", path, no, k);
		snprintf(from_file[i], sizeof from_file[i], "%s:%d", path, no);
	}
	if (ferror(f))
		sr_die(SR_EX_USAGE, "%s: read error:", path);
	fclose(f);
}

const char *
sr_url_shown(const char *url, char *out, size_t n)
{
	CURLU *u;
	char *pw = NULL, *user = NULL, *query = NULL, *shown = NULL;

	snprintf(out, n, "%s", url);
	if (!strchr(url, '@') && !strchr(url, '?') && !strchr(url, '#'))
		return out; /* nothing in it can be a secret */
	if (!(u = curl_url()) || curl_url_set(u, CURLUPART_URL, url, CURLU_NON_SUPPORT_SCHEME) != CURLUE_OK) {
		snprintf(out, n, "(a URL that does not parse, redacted)");
		goto out;
	}
	if (curl_url_get(u, CURLUPART_PASSWORD, &pw, 0) == CURLUE_OK)
		curl_url_set(u, CURLUPART_PASSWORD, "redacted", 0);
	else if (curl_url_get(u, CURLUPART_USER, &user, 0) == CURLUE_OK)
		curl_url_set(u, CURLUPART_USER, "redacted", 0); /* a user alone may be a token */
	if (curl_url_get(u, CURLUPART_QUERY, &query, 0) == CURLUE_OK)
		curl_url_set(u, CURLUPART_QUERY, "redacted", 0);
	curl_url_set(u, CURLUPART_FRAGMENT, NULL, 0);
	if (curl_url_get(u, CURLUPART_URL, &shown, 0) == CURLUE_OK)
		snprintf(out, n, "%s", shown);
	else
		snprintf(out, n, "(redacted)");
out:
	curl_free(pw);
	curl_free(user);
	curl_free(query);
	curl_free(shown);
	curl_url_cleanup(u);
	return out;
}

void
sr_config_each(void (*fn)(const char *name, const char *value, const char *from, const char *secret,
    void *arg), void *arg)
{
	char shown[1024], state[300];

	for (int i = 0; settings[i].name; i++) {
		const char *name = settings[i].name, *v = getenv(name), *secret = NULL;
		const char *from = from_file[i][0] ? from_file[i] : v && *v ? "environment" : "default";

		if (!(v && *v))
			v = settings[i].dflt;
		/* A secret's state goes on the line of the setting it is taken
		 * from: NAME_FILE when set (it wins), else NAME. */
		if (settings[i].secret == SECRET_FILE && *v) {
			secret = secret_file_state(v, state, sizeof state);
		} else if (settings[i].secret == SECRET) {
			char filevar[128];
			const char *file;

			snprintf(filevar, sizeof filevar, "%s_FILE", name);
			if (!((file = getenv(filevar)) && *file))
				secret = *v ? "set" : "not set";
		}
		if (settings[i].secret == SECRET && *v)
			v = "(set, redacted)";
		else if (!strcmp(name, "SRQ_GATEWAY") || !strcmp(name, "SRQ_REDIS"))
			v = sr_url_shown(v, shown, sizeof shown);
		fn(name, v, from, secret, arg);
	}
}

const char *
sr_config_file(void)
{
	return config_path;
}

void
sr_config_init(struct sr_config *cfg)
{
	long unlimited;

	memset(cfg, 0, sizeof *cfg);
	/* hiredis writes to its socket without MSG_NOSIGNAL: a Redis that goes
	 * away must be an error we report, not a signal that kills us silently. */
	signal(SIGPIPE, SIG_IGN);
	load_config_file();
	cfg->redis_url = env_str("SRQ_REDIS", "redis://127.0.0.1:6379/0");
	cfg->redis_from = getenv("SRQ_REDIS") && *getenv("SRQ_REDIS") ? "SRQ_REDIS" : "the default Redis URL";
	cfg->prefix = env_str("SRQ_PREFIX", "polling");
	if (!sr_valid_id(cfg->prefix))
		sr_die(SR_EX_USAGE, "SRQ_PREFIX: '%.80s' must match [A-Za-z0-9_.-]{1,64}", cfg->prefix);
	cfg->gateway = env_str("SRQ_GATEWAY", "http://127.0.0.1:8080");
	cfg->gateway_from = "SRQ_GATEWAY";
	/* Every number is bounded: a typo or an overflow is a usage error that
	 * names the setting, never a silent wrap. */
	cfg->min_interval_ms = env_long("SRQ_MIN_INTERVAL_MS", 600000, 0, 7 * 86400000L);
	cfg->qps = env_long("SRQ_QPS", 10, 0, 100000);
	cfg->max_running = env_long("SRQ_MAX_RUNNING", 20, 0, 100000);
	cfg->lease_ms = env_long("SRQ_LEASE_MS", 60000, 1000, 86400000);
	cfg->rate_window_ms = env_long("SRQ_RATE_WINDOW_MS", 1020, 1000, 60000);
	cfg->gw_timeout_ms = env_long("SRQ_GATEWAY_TIMEOUT_MS", 10000, 100, 600000);
	cfg->gw_connect_timeout_ms = env_long("SRQ_GATEWAY_CONNECT_TIMEOUT_MS", 3000, 100, 600000);
	cfg->alert_after = env_long("SRQ_ALERT_AFTER", 3, 1, 1000000);
	cfg->freeze_after = env_long("SRQ_FREEZE_AFTER", 10, 1, 1000000);
	cfg->concurrency = env_long("SRQ_CONCURRENCY", 64, 1, 100000);
	cfg->audit_maxlen = env_long("SRQ_AUDIT_MAXLEN", 100000, 100, 100000000);
	cfg->audit_days = env_long("SRQ_AUDIT_DAYS", 30, 1, 3650);
	cfg->burst = env_long("SRQ_RATE_BURST", 1, 1, 1000);
	cfg->confirm_delay_ms = env_long("SRQ_CONFIRM_DELAY_MS", 2000, 0, 86400000);
	cfg->wait_replicas = env_long("SRQ_WAIT_REPLICAS", 0, 0, 64);
	cfg->wait_timeout_ms = env_long("SRQ_WAIT_TIMEOUT_MS", 1000, 1, 60000);
	cfg->redis_timeout_ms = env_long("SRQ_REDIS_TIMEOUT_MS", 15000, 100, 600000);
	cfg->profiles_dir = env_str("SRQ_PROFILES", NULL);
	unlimited = env_long("SRQ_UNLIMITED", 0, 0, 1);
	/* A rate or concurrency of 0 would mean "no limit" at the carrier: only
	 * on purpose (benchmarks), never by a typo or an attempt to pause. */
	if ((cfg->qps == 0 || cfg->max_running == 0) && !unlimited)
		sr_die(SR_EX_USAGE, "%s: 0 would mean no limit at the carrier; set SRQ_UNLIMITED=1 "
		    "to mean it (benchmarks), or use 'sr-admin pause' to stop calls",
		    cfg->qps == 0 ? "SRQ_QPS" : "SRQ_MAX_RUNNING");
}

void
sr_usage(int status, const char *usage)
{
	if (status == 0) {
		fputs(usage, stdout);
		exit(sr_finish(0));
	}
	fprintf(stderr, "Try '%s --help' for more information.\n", sr_prog);
	exit(status);
}

int
sr_config_option(struct sr_config *cfg, int opt, const char *arg, const char *usage)
{
	switch (opt) {
	case SR_OPT_REDIS:
		cfg->redis_url = arg;
		cfg->redis_from = "--redis";
		return 1;
	case SR_OPT_PREFIX:
		if (!sr_valid_id(arg))
			sr_die(SR_EX_USAGE, "--prefix: '%s' must match [A-Za-z0-9_.-]{1,64}", arg);
		cfg->prefix = arg;
		return 1;
	case SR_OPT_GATEWAY:
		cfg->gateway = arg;
		cfg->gateway_from = "--gateway";
		return 1;
	case SR_OPT_VERSION:
		printf("%s %s\n", sr_prog, SR_VERSION);
		exit(sr_finish(0));
	case 'h': sr_usage(0, usage);
	case '?': sr_usage(SR_EX_USAGE, usage);
	}
	return 0;
}

void
sr_optional_value(int argc, char **argv, const char *opt)
{
	static char given[4][40];
	static int n;

	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], opt) && (i + 1 == argc || (argv[i + 1][0] == '-' && argv[i + 1][1])) &&
		    n < 4) {
			snprintf(given[n], sizeof given[n], "%s=", opt);
			argv[i] = given[n++];
		}
}

void
sr_gateway_url_check(const struct sr_config *cfg)
{
	const char *url = cfg->gateway;
	char shown[1024];

	/* Only http(s) reaches a carrier; the URL may carry a token, so it is
	 * shown redacted. The flag and the environment (or the config file)
	 * are held to the same rule, and the message names which it was. */
	if (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0)
		sr_die(SR_EX_USAGE, "%s: '%s' is not an http(s) URL", cfg->gateway_from,
		    sr_url_shown(url, shown, sizeof shown));
}

void
sr_no_operands(int argc, char *argv[], const char *usage)
{
	if (optind < argc) {
		fprintf(stderr, "%s: unexpected argument '%s'\n", sr_prog, argv[optind]);
		sr_usage(SR_EX_USAGE, usage);
	}
}
