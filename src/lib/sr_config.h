/* sr_config.h - the API of sr_config.c. */
#ifndef SR_CONFIG_H
#define SR_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <hiredis/hiredis.h>
#include <jansson.h>

struct sr_config {
	const char *redis_url;  /* --redis / SRQ_REDIS */
	const char *redis_from; /* which of the two, for messages */
	const char *prefix;     /* --prefix / SRQ_PREFIX */
	const char *gateway;    /* --gateway / SRQ_GATEWAY */
	const char *gateway_from; /* which of the two: "--gateway" or "SRQ_GATEWAY" */
	long min_interval_ms;   /* SRQ_MIN_INTERVAL_MS */
	long qps;               /* SRQ_QPS: default per-account rate */
	long max_running;       /* SRQ_MAX_RUNNING */
	long lease_ms;          /* SRQ_LEASE_MS */
	long rate_window_ms;    /* SRQ_RATE_WINDOW_MS: 1 s plus headroom for gate-to-wire jitter */
	long gw_timeout_ms;     /* SRQ_GATEWAY_TIMEOUT_MS */
	long gw_connect_timeout_ms;
	long alert_after;       /* SRQ_ALERT_AFTER */
	long freeze_after;      /* SRQ_FREEZE_AFTER */
	long concurrency;       /* SRQ_CONCURRENCY (sr-exec) */
	long audit_maxlen;      /* SRQ_AUDIT_MAXLEN: audit stream cap per account */
	long audit_days;        /* SRQ_AUDIT_DAYS: audit entries older are trimmed (sr-sweep) */
	long burst;             /* SRQ_RATE_BURST: calls at once after a quiet spell (1) */
	long confirm_delay_ms;  /* SRQ_CONFIRM_DELAY_MS: wait before querying an unknown result */
	long wait_replicas;     /* SRQ_WAIT_REPLICAS: ack only once N replicas have the write (0) */
	long wait_timeout_ms;   /* SRQ_WAIT_TIMEOUT_MS: how long to wait for them (1000) */
	long redis_timeout_ms;  /* SRQ_REDIS_TIMEOUT_MS: a Redis reply not read by then is a failure (15000) */
	const char *profiles_dir; /* SRQ_PROFILES: directory of carrier profiles */
};

/* Long option codes shared by every tool (use in getopt_long tables). */
enum { SR_OPT_REDIS = 1000, SR_OPT_PREFIX, SR_OPT_GATEWAY, SR_OPT_VERSION, SR_OPT_HELP };
#define SR_COMMON_LONGOPTS \
	{ "redis", required_argument, NULL, SR_OPT_REDIS }, \
	{ "prefix", required_argument, NULL, SR_OPT_PREFIX }, \
	{ "help", no_argument, NULL, 'h' }, \
	{ "version", no_argument, NULL, SR_OPT_VERSION }

/* Every setting with its value (secrets redacted) and where it came from:
 * "environment", "FILE:LINE" (the config file) or "default"; for the
 * setting a secret is taken from (NAME_FILE when set, else NAME), secret
 * says its state ("set", "not set", "readable", "empty", "missing: ...",
 * "unreadable: ..."), found without reading it; NULL for the others. */
void sr_config_each(void (*fn)(const char *name, const char *value, const char *from,
    const char *secret, void *arg), void *arg);
/* The config file read, or NULL. */
const char *sr_config_file(void);
/* url for display: a password (or a user with none: a token) and a query
 * (where tokens go) replaced by "redacted", a fragment left out; written
 * to out. */
const char *sr_url_shown(const char *url, char *out, size_t n);
/* Fill cfg from the config file (SRQ_CONFIG, or /etc/srq/srq.conf when it
 * exists), the environment (which overrides it) and defaults; dies (exit 2)
 * on a malformed file or number. No secret is read here (sr_secret.c). */
void sr_config_init(struct sr_config *cfg);
/* Handle a common option; returns 1 if handled. Prints version/usage and
 * exits for --version/--help. */
int sr_config_option(struct sr_config *cfg, int opt, const char *arg, const char *usage);
/* Print usage to stdout (status 0) or a hint to stderr, then exit. */
void sr_usage(int status, const char *usage) __attribute__((noreturn));
/* The gateway's base URL (cfg->gateway) that is not http(s) is a usage
 * error (exit 2) naming where it came from, the URL shown redacted. */
void sr_gateway_url_check(const struct sr_config *cfg);
/* After getopt: any operand left is a usage error (exit 2). */
void sr_no_operands(int argc, char *argv[], const char *usage);
/* Before getopt: an option whose value may be left out ("--watch [S]",
 * "--ack [ID]"; declared required_argument) given without one (last, or
 * before another option) becomes "OPT=": getopt hands it an empty value,
 * and never takes the next option for its value. */
void sr_optional_value(int argc, char **argv, const char *opt);
/* Parse a non-negative decimal; returns -1 on anything else (a sign,
 * spaces, trailing text, an overflow). */
long sr_parse_long(const char *s);
/* A setting's number, from lo to hi, or exit 2 naming the setting (a flag
 * like "--for", or an environment variable). */
long sr_num(const char *name, const char *s, long lo, long hi);

#endif
