/* sr.h - the srq shared library: one header, grouped by the file that
 * implements each part (mblaze style). Every tool links the objects it needs.
 *
 * Conventions: functions that can fail softly return -1 (or NULL) and leave a
 * message in the object they were given (err/errstr); sr_die() is only for
 * usage and configuration errors, where the tool cannot start at all.
 */
#ifndef SR_H
#define SR_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <hiredis/hiredis.h>
#include <jansson.h>

#define SR_VERSION "0.2.0"

/* Exit codes, the same for every tool (README: Exit codes). */
enum {
	SR_EX_OK = 0,      /* all done */
	SR_EX_REJECTED = 1, /* some input lines rejected, the rest processed */
	SR_EX_USAGE = 2,   /* usage or configuration error */
	SR_EX_BACKEND = 3, /* Redis or the gateway unavailable */
	SR_EX_HELD = 4,    /* sr-claim --until-empty: what is left is held (a pause, a breaker) */
};

/* ---------------------------------------------------------------- sr_util.c */

extern const char *sr_prog;
/* Set by the tools that run unattended (cron, systemd): each diagnostic
 * line on stderr then starts with its ISO UTC time when stderr is not a
 * terminal (a log file), or with its syslog level when it is the journal's
 * stream (JOURNAL_STREAM), which stamps lines itself. */
extern int sr_log_stamp;
enum { SR_LOG_ERR = 3, SR_LOG_WARNING = 4, SR_LOG_NOTICE = 5 };
/* What starts a diagnostic line on stderr (see sr_log_stamp): the journal's
 * level prefix "<N>", the time, or nothing. */
void sr_log_head(int prio);

/* Print "PROG: fatal: MSG" and exit(status). A format ending in ':' gets
 * ": strerror(errno)" appended (sbase's eprintf rule). */
void sr_die(int status, const char *fmt, ...) __attribute__((noreturn, format(printf, 2, 3)));
/* Print "PROG: LEVEL: MSG" at syslog priority PRIO (same ':' rule):
 * sr_warn, "warning"; sr_note, "note" (how something given was read, news,
 * not a fault). */
void sr_say(int prio, const char *level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
#define sr_warn(...) sr_say(SR_LOG_WARNING, "warning", __VA_ARGS__)
#define sr_note(...) sr_say(SR_LOG_NOTICE, "note", __VA_ARGS__)
/* A warning an item may share with many (a refusal that fails a whole
 * batch): "subject: msg" for the first (subject may be NULL); the next
 * items with the same msg are counted, and said as "N more like it: msg"
 * when another msg comes, after 5 s, or at exit (sr_finish, sr_die). */
void sr_warn_each(const char *subject, const char *msg);
/* "card 'ID'", for sr_warn_each (a static buffer). */
const char *sr_card_subject(const char *card);
/* Allocation that never returns NULL (dies with exit 2 on out-of-memory). */
void *sr_malloc(size_t n);
void *sr_realloc(void *p, size_t n);
char *sr_strdup(const char *s);
/* Flush and close stdout; a failed write (full disk, closed pipe) turns a
 * zero status into SR_EX_BACKEND. Returns the status to exit with. */
int sr_finish(int status);
/* A view's reader may stop reading when it has seen enough ("| head -1"):
 * then a closed pipe (EPIPE) is no failure, and sr_finish says nothing of
 * it and keeps the status (sr-admin, sr-stat: what they did is done; no
 * "Broken pipe" on stderr). Not for a pipeline's stage, whose lost records
 * are lost work (exit 3). */
void sr_reader_may_leave(void);
/* Flush stdout between a view's parts (a --watch frame): 0, or -1 when the
 * write failed (its reader gone, if EPIPE: then sr_finish knows it). */
int sr_flush_view(void);
/* Flush stdout after a batch; a reader that went away (EPIPE: SIGPIPE is
 * ignored so a Redis socket closing cannot kill us) ends the tool, exit 3. */
void sr_flush(void);
/* Monotonic milliseconds, for timeouts and pacing only; decisions use the
 * Redis server's clock (sr_redis_time_ms). */
int64_t sr_mono_ms(void);
void sr_sleep_ms(int64_t ms);
/* Who runs this, for the audit: SUDO_USER, else the effective user. */
const char *sr_who(void);
/* Worst of two exit statuses: BACKEND > USAGE > REJECTED > OK. */
int sr_worst(int a, int b);

/* ---------------------------------------------------------------- sr_time.c */

/* A moment, in ms on the clock of now_ms (the Redis server's): a duration
 * ("500ms", "90s", "10m", "2h", "1d") from now, ahead (dir > 0: --until) or
 * ago (dir < 0: --since); "now"; "today" or "yesterday" (the start of the
 * local day); ISO-8601 ("2026-12-01", "2026-12-01T10:00", "...:00Z",
 * "...+08:00"); or epoch milliseconds (epoch seconds are refused: a silent
 * factor of 1000). A time without a zone is the local zone's (TZ): zone
 * says which ("" when none was needed). -1 when not understood; -2 (err
 * says why) when understood and refused: the zone skips that local time or
 * has it twice (daylight saving), or TZ names no zone. A time before the
 * epoch is 0. */
int64_t sr_parse_when(const char *s, int64_t now_ms, int dir, char *zone, size_t zonelen, char *err,
    size_t errlen);
/* An option's time (--until: dir > 0, --since: dir < 0), as sr_parse_when
 * reads it; one not understood dies (exit 2) with "OPT: 'S' is not a time
 * FORMS", one refused with why; one read in the local zone is said on
 * stderr (sr_time_note). */
int64_t sr_time_option(const char *opt, const char *s, int64_t now_ms, int dir, const char *forms);
/* "PROG: note: OPT 'S' has no zone: read in ZONE, that is ISO-UTC". */
void sr_time_note(const char *opt, const char *s, int64_t ms, const char *zone);
/* TZ, when set, names a zone (a file under TZDIR or /usr/share/zoneinfo,
 * or a POSIX rule such as CST-8): 0, else -1 with err saying so. */
int sr_zone_check(char *err, size_t errlen);
/* How far ahead of the Redis clock a fact's time may be: more is refused
 * (a writer's clock wrong, a typo), not trusted. */
#define SR_AS_OF_SKEW_MS (5 * 60 * 1000)
/* When a fact was true (a request's "as_of", --as-of): epoch ms, or
 * ISO-8601 with a zone ("2026-12-01T10:00:00Z", "...+08:00", seconds and
 * their fraction optional); in a record a time without a zone is refused,
 * not read as UTC. flag (an option's value): also "now" and a duration ago
 * ("10m", "2h"), and a time without a zone is the local zone's, as
 * sr_parse_when reads it (zone says which). With now_ms > 0 (the Redis
 * clock), a time more than SR_AS_OF_SKEW_MS ahead of it is refused. ms, or
 * -1 with err set. */
int64_t sr_parse_as_of(const char *s, int64_t now_ms, int flag, char *zone, size_t zonelen, char *err,
    size_t errlen);
/* Whether a time t is more than SR_AS_OF_SKEW_MS ahead of the Redis clock
 * (now_ms; not known when <= 0): 1 with err saying so of subject. Trusted,
 * its facts would outlive every newer one. */
int sr_as_of_ahead(const char *subject, int64_t t, int64_t now_ms, char *err, size_t errlen);
/* Epoch ms as ISO-8601 UTC ("2026-12-01T10:00:00.123Z") into buf (>= 32):
 * what records say. */
char *sr_iso_ms(char *buf, size_t n, int64_t ms);
/* --local (a --table's times): from now on, times for people (sr_iso_people,
 * sr_when) are in the local zone, with its offset, instead of UTC. -1 (err
 * set) when TZ names no zone. */
int sr_times_local(char *err, size_t errlen);
/* A tool's --utc and --local: both, or --local without --table (the view
 * for people: a record's times stay UTC), or a TZ that names no zone, die
 * (exit 2); --local, times for people from then on (sr_times_local). */
void sr_people_zone(int table, int utc, int local);
/* Epoch ms for people: as sr_iso_ms, or with --local
 * "2026-12-01T18:00:00.123+08:00". */
char *sr_iso_people(char *buf, size_t n, int64_t ms);
/* A time for a sentence: "2026-12-01T10:00:00Z (in 2m05s)" or "(3m ago)",
 * relative to now (both epoch ms); with --local "...+08:00 (in 2m05s)". The
 * text lives in one of 8 static buffers, reused in turn: enough for one
 * sentence. */
const char *sr_when(int64_t ms, int64_t now);
/* Worst of two exit statuses: BACKEND > USAGE > REJECTED > HELD > OK. */
int sr_worst(int a, int b);

/* ------------------------------------------------------------ sr_dispatch.c */

/* The dispatchers' options and pacing (sr-claim, dev-eval). */
struct sr_dispatch {
	int follow, until_empty, said_off;
	long for_s, max, batch; /* -1: no limit */
	long total;             /* claimed so far */
	int64_t t0;
};
enum { SR_OPT_FOLLOW = 1100, SR_OPT_UNTIL_EMPTY, SR_OPT_FOR, SR_OPT_MAX, SR_OPT_BATCH };
#define SR_DISPATCH_LONGOPTS \
	{ "follow", no_argument, NULL, SR_OPT_FOLLOW }, \
	{ "until-empty", no_argument, NULL, SR_OPT_UNTIL_EMPTY }, \
	{ "for", required_argument, NULL, SR_OPT_FOR }, \
	{ "max", required_argument, NULL, SR_OPT_MAX }, \
	{ "batch", required_argument, NULL, SR_OPT_BATCH }
void sr_dispatch_init(struct sr_dispatch *d);
/* Handle a dispatcher option; 1 if handled (dies on a bad value). */
int sr_dispatch_option(struct sr_dispatch *d, int opt, const char *arg);
/* --for elapsed, --max reached, or a stop asked (SIGTERM, SIGINT, caught
 * from sr_dispatch_init on): stop claiming. */
int sr_dispatch_done(const struct sr_dispatch *d);
/* What is left of --for, in ms (0 at the end); -1 without --for. */
long long sr_dispatch_left_ms(const struct sr_dispatch *d);
/* How many to claim this round: what --max leaves, else per_round. */
long sr_dispatch_budget(const struct sr_dispatch *d, long per_round);
/* Nothing claimed this round: 0 to stop (one pass done, or --until-empty
 * and nothing queued), else sleep toward the next due time and return 1. */
int sr_dispatch_idle(struct sr_dispatch *d, long long queued, long long wait_ms);
/* The switch is off: say so once (what is kept), 0 to stop, 1 after a nap. */
int sr_dispatch_switch_off(struct sr_dispatch *d, const char *kept);

/* -------------------------------------------------------------- sr_config.c */

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
/* A secret from the environment (SRQ_REDIS_PASSWORD, ...), read now, by the
 * tool about to use it: NAME_FILE's content, its trailing newline dropped
 * (it wins), else NAME. 0 with *value (NULL when not set; free it, wiped),
 * or -1 with err naming the file and why it cannot be read. */
int sr_secret_read(const char *name, char **value, char *err, size_t errlen);
/* The config file read, or NULL. */
const char *sr_config_file(void);
/* url for display: a password (or a user with none: a token) and a query
 * (where tokens go) replaced by "redacted", a fragment left out; written
 * to out. */
const char *sr_url_shown(const char *url, char *out, size_t n);
/* Fill cfg from the config file (SRQ_CONFIG, or /etc/srq/srq.conf when it
 * exists), the environment (which overrides it) and defaults; dies (exit 2)
 * on a malformed file or number. No secret is read here (sr_secret_read). */
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

/* ---------------------------------------------------------------- sr_redis.c */

/* A FIFO of fixed-size elements, grown by doubling (sr_redis.c). */
struct sr_ring {
	char *a;
	size_t size, cap, head, len;
};

/* One Redis server srq talks to: the one server, or one master of a
 * cluster. Its replies come back in the order its commands were sent; owed
 * lists whose they are (pipeline sequence numbers). */
struct sr_node {
	redisContext *c;
	char host[256];
	int port;
	char path[512];       /* a unix socket instead of host and port */
	unsigned long loads;  /* how many times the scripts were loaded on it */
	int wrote;            /* sent commands since the last WAIT */
	int waited;           /* what the last WAIT said: 0 confirmed, 1 short, -1 failed */
	unsigned gen;         /* connections made so far: a WAIT speaks for its own */
	struct sr_ring owed;
};

/* The connection: one server (redis://, unix://), or the masters of a
 * cluster (redis+cluster://, sr_cluster.c: each key goes to the master that
 * serves its slot). Replies come back in the order the caller appended the
 * commands, whichever nodes ran them. errstr holds the last connection-level
 * error (Redis down, I/O); a script's own error reply is returned as a
 * REDIS_REPLY_ERROR reply instead. */
struct sr_addr {
	char host[256];
	int port;
};

struct sr_redis {
	const struct sr_config *cfg;
	char errstr[256];
	int cluster;
	int sentinel;             /* redis+sentinel://: the master is whom the sentinels name */
	struct sr_addr *sentinels;
	int nsentinels;
	char master_name[128];
	int db;                   /* one server: SELECT it */
	struct sr_node *node;     /* node[0]: the server; on a cluster, every node met */
	int nnodes;
	int *master;              /* the masters (indexes into node), in slot order */
	int nmasters;
	int *slot;                /* cluster: slot -> node index, -1 while unknown */
	int stale;                /* cluster: read the slot map again before routing */
	struct sr_ring pq;        /* the commands awaiting replies, in caller order (pq.len: how many) */
	int last_node;            /* where the last reply came from, on which connection */
	unsigned last_gen;
	long long retry_at;       /* a failed map or master lookup: not again before (ms) */
	int discarding;           /* sr_redis_discard: replies dropped, nothing sent again */
	long long *loop_until;    /* cluster, per slot: its redirects ran out; not waited for
	                           * again before this (monotonic ms). NULL until needed */
	unsigned long long seq0;  /* the sequence number of pq's first */
	char *password;           /* SRQ_REDIS_PASSWORD(_FILE), read as it connects; never argv */
};

/* The Lua scripts, embedded at build time from share/lua: enum sr_script
 * (SR_LUA_<NAME>, one per file), sr_lua_source[] and sr_lua_name[]. */
#include "sr_lua_gen.h"

/* Connect (and AUTH when a password is configured: read here, by the tools
 * that talk to Redis only). Returns 0, -1 with r->errstr set, or -2 for a
 * configuration error (a URL holding a password, a password file that
 * cannot be read). Parses redis://host:port[/db] and unix:///path[?db=N]. */
int sr_redis_connect(struct sr_redis *r, const struct sr_config *cfg);
void sr_redis_close(struct sr_redis *r);
/* Connect or die: a bad URL exits 2, Redis unavailable exits 3 (for tools
 * with no input lines to answer). */
void sr_redis_open(struct sr_redis *r, const struct sr_config *cfg);
/* For filters: a bad URL exits 2; Redis unavailable returns 0 after saying
 * on stderr that "every <answer>", since each input line must still be
 * answered with an error record. 1 when connected. */
int sr_redis_open_filter(struct sr_redis *r, const struct sr_config *cfg, const char *answer);
/* Append a command to the pipeline (binary safe). */
void sr_redis_append(struct sr_redis *r, int argc, const char **argv, const size_t *lens);
/* Append EVALSHA of a script; a NOSCRIPT reply is retried with EVAL by
 * sr_redis_reply transparently (the script text is kept for that). */
void sr_redis_append_script(struct sr_redis *r, enum sr_script s, int nkeys, int argc,
    const char **argv, const size_t *lens);
/* Send what was appended without waiting for replies, so Redis works while
 * the caller does something else. Errors surface at the next reply. */
void sr_redis_flush(struct sr_redis *r);
/* Read the next pipelined reply. NULL means the connection failed (errstr
 * set); every later reply is lost too. Caller frees with freeReplyObject. */
redisReply *sr_redis_reply(struct sr_redis *r);
/* Drain and free every reply still owed (after an error, for instance). */
void sr_redis_discard(struct sr_redis *r);
/* Run one command and return its reply (NULL on connection failure). */
redisReply *sr_redis_cmd(struct sr_redis *r, int argc, const char **argv);
/* How many masters hold the data: 1 for one server. A command that is not
 * about one key (SCAN, DBSIZE) runs on each with sr_redis_cmd_at. */
int sr_redis_masters(struct sr_redis *r);
redisReply *sr_redis_cmd_at(struct sr_redis *r, int master, int argc, const char **argv);
/* The same, for tools that cannot go on without the answer: a lost
 * connection or an error reply ends the tool (exit 3), naming the command. */
redisReply *sr_redis_must(struct sr_redis *r, int argc, const char **argv);
/* The keys matching pattern, by SCAN on every master (for the low-frequency
 * jobs allowed to walk the keyspace: the sweep, a migration): fn(key + skip,
 * arg) for each key longer than skip. A failure ends the tool (exit 3). */
void sr_redis_scan_must(struct sr_redis *r, const char *pattern, size_t skip,
    void (*fn)(const char *, void *), void *arg);
/* An error reply that says Redis cannot take the command now (out of
 * memory, a read-only replica, loading, busy...), rather than a refusal by a
 * script: 1. */
int sr_redis_backend_error(const char *err);
/* With SRQ_WAIT_REPLICAS=N, before acking what was written: WAIT until N
 * replicas have it. 0 (or N is 0), 1 if fewer had it within the timeout
 * (errstr says so: the writes stand on the master but could be lost with
 * it), -1 if the connection failed. */
int sr_redis_wait_replicas(struct sr_redis *r, const struct sr_config *cfg);
/* Where the last reply sr_redis_reply returned came from: a node and its
 * connection. */
void sr_redis_reply_from(struct sr_redis *r, int *node, unsigned *gen);
/* The same WAIT, on that node for what was written there, on that very
 * connection: 1 (short, errstr set) if it was lost and made again since,
 * for a new connection's WAIT would not speak for the old one's writes. */
int sr_redis_wait_on(struct sr_redis *r, const struct sr_config *cfg, int node, unsigned gen);
/* Redis was lost mid-run: say so on stderr once (the records say it per
 * line too) and clear *up. */
void sr_redis_lost(struct sr_redis *r, int *up, const char *answer);
/* The Redis server's clock in ms, or -1 on failure. */
int64_t sr_redis_time_ms(struct sr_redis *r);

/* -------------------------------------------------------------- sr_cluster.c */

#define SR_CLUSTER_SLOTS 16384
/* The cluster slot of a key: CRC16 of the key, or of its hash tag (the
 * text between the first '{' and the next '}', when not empty). */
unsigned sr_key_slot(const char *key, size_t len);
/* Parse redis+cluster://host:port[,host:port...] into r's nodes (not yet
 * connected). 0, -1 not such a URL, -2 credentials in it. */
int sr_cluster_parse(struct sr_redis *r, const char *url);
/* Read the slot map (CLUSTER SLOTS) from the first node that answers, on a
 * connection of its own. 0, or -1 with errstr set. */
int sr_cluster_refresh(struct sr_redis *r);
/* The node a MOVED or ASK error from node `from` points at ("MOVED 3999
 * 127.0.0.1:6381"), added when new; -1 if the error is neither. *ask is set
 * for ASK. */
int sr_cluster_redirect(struct sr_redis *r, int from, const char *err, int *ask);
/* The index of node host:port, added (not connected) when new. */
int sr_cluster_node(struct sr_redis *r, const char *host, int port);
/* host:port, host may be [IPv6] or empty. 0 or -1. */
int sr_parse_hostport(const char *s, size_t n, char *host, size_t hostlen, int *port);
/* Connect to one node (AUTH, SELECT, scripts loaded): sr_redis.c. */
int sr_redis_node_connect(struct sr_redis *r, struct sr_node *n, int scripts);
/* What failed on a node's connection, a read timeout said as such. */
const char *sr_redis_conn_error(const struct sr_redis *r, const redisContext *c);

/* ------------------------------------------------------------- sr_sentinel.c */

/* Parse redis+sentinel://host:port[,host:port...]/MASTERNAME into r. 0, -1
 * not such a URL, -2 credentials in it. */
int sr_sentinel_parse(struct sr_redis *r, const char *url);
/* Ask the sentinels for the master's address (the first that answers) and
 * make it r's master, once it says it is one (ROLE): a failover may be
 * under way, so it asks again for up to a few seconds. 0, or -1 with errstr. */
int sr_sentinel_resolve(struct sr_redis *r);

/* ----------------------------------------------------------------- sr_keys.c */

/* Key names (README: Redis layout). Every key of a card's command carries its
 * account as the hash tag, so each script touches one slot. Results are
 * written into buf (size SR_KEY_MAX) and returned. */
#define SR_KEY_MAX 256
char *sr_key_account(char *buf, const char *prefix, const char *carrier, const char *suffix);
/* A script's account keys, one per suffix (NULL-terminated): argv[i] =
 * keys[i] = the account's key named suffixes[i]. Returns how many. */
int sr_keys_account(char (*keys)[SR_KEY_MAX], const char **argv, const char *prefix,
    const char *carrier, const char *const *suffixes);
char *sr_key_card(char *buf, const char *prefix, const char *carrier, const char *card);
/* Where a card with no command sleeps (README "Redis layout"): its bucket
 * hash into buf; returns its field (the id's last two characters). The
 * packed value holds sr_idle_fields' values in order, '|' between them. */
const char *sr_key_idle(char *buf, const char *prefix, const char *carrier, const char *card);
/* The same from a card's command hash key; NULL if card_key is not one. */
const char *sr_key_idle_of(char *buf, const char *card_key);
extern const char *const sr_idle_fields[];
enum sr_idle_field { SR_IDLE_VER, SR_IDLE_LAST_CALL, SR_IDLE_SEEN, SR_IDLE_SEEN_MS, SR_IDLE_LAST_DIR,
	SR_IDLE_DIR_CHANGES, SR_IDLE_SUPERSEDED };
/* Where a card's command waits packed until its claim, when the card has
 * no hash (README "Redis layout"): its wait bucket into buf; returns its
 * field, as sr_key_idle. The value holds sr_wait_fields' values in order. */
const char *sr_key_wait(char *buf, const char *prefix, const char *carrier, const char *card);
extern const char *const sr_wait_fields[];
enum sr_wait_field { SR_WAIT_ACTION, SR_WAIT_REASON, SR_WAIT_SCENE, SR_WAIT_SOURCE, SR_WAIT_PRIO };
/* The value of field i of a packed value (an idle state, or a waiting
 * command) into out (n bytes); 0 when it is absent (or longer than out). */
int sr_idle_get(const char *packed, int i, char *out, size_t n);
/* The same for a waiting command's field i, its scene the reason when left empty. */
int sr_wait_get(const char *packed, int i, char *out, size_t n);
char *sr_key_card_facts(char *buf, const char *prefix, const char *card);
char *sr_key_device_facts(char *buf, const char *prefix, const char *device);
char *sr_key_accounts(char *buf, const char *prefix);
/* The cards of a device (SET of card ids), kept by sr-asset. */
char *sr_key_device_cards(char *buf, const char *prefix, const char *device);
/* Device evaluation keys are sharded: {dN} with N = FNV-1a(device) mod 16. */
#define SR_DEVICE_SHARDS 16
int sr_device_shard(const char *device);
/* "P:device_eval:{dN}:SUFFIX" (e.g. the shard's "queue") */
char *sr_key_shard(char *buf, const char *prefix, int shard, const char *suffix);
/* "P:device_eval:{dN}:dev:DEVICE" + suffix ("" for its state, ":scenes") */
char *sr_key_device_eval(char *buf, const char *prefix, const char *device, const char *suffix);
char *sr_key_device_lock(char *buf, const char *prefix, const char *device);
char *sr_key_switch(char *buf, const char *prefix);

/* ---------------------------------------------------------------- sr_jsonl.c */

#define SR_LINE_MAX (64 * 1024)

/* A line reader over a file descriptor that can tell "no complete line yet"
 * from end of input, so filters can batch what is available without waiting. */
struct sr_reader {
	int fd;
	char *buf;
	size_t len, off, cap;
	long lineno;  /* number of the last line returned, from 1 */
	int eof;
	int err;      /* errno of a failed read (input ends there): see sr_reader_failed */
	int skipping; /* inside an over-long line: discard up to its newline */
	size_t linelen; /* length of the last line returned (it may hold a NUL) */
	const char *why; /* why the last SR_READ_BAD line is not a line */
};
enum { SR_READ_LINE = 1, SR_READ_AGAIN = 0, SR_READ_EOF = -1, SR_READ_BAD = 2 };
void sr_reader_init(struct sr_reader *rd, int fd);
void sr_reader_free(struct sr_reader *rd);
/* Next line (NUL-terminated, without its newline) into *line, valid until the
 * next call. block=0 returns SR_READ_AGAIN when no whole line is buffered and
 * none can be read without waiting. SR_READ_BAD reports a line that cannot be
 * read as text, rd->why says why (over SR_LINE_MAX, or holding a NUL byte);
 * it is skipped and lineno counts it, so the caller answers it by number. */
int sr_reader_next(struct sr_reader *rd, char **line, int block);
/* After EOF: 0, or an exit status (SR_EX_USAGE) after saying on stderr that
 * the input could not be read (a directory, an I/O error). */
int sr_reader_failed(const struct sr_reader *rd);
/* Parse one input line as a JSON object; NULL with "malformed JSON: ..." in
 * err. Duplicate keys are refused: the last would silently win. */
json_t *sr_json_line(const char *line, char *err, size_t errlen);
/* Wait up to timeout_ms for input (or EOF); 1 if readable. */
int sr_reader_wait(struct sr_reader *rd, int timeout_ms);

/* Mark a record rejected: "status":"rejected" and "error" set in o, and
 * "PROG: line N: ERROR" on stderr. Returns SR_EX_REJECTED (for sr_worst). */
int sr_rejected(json_t *o, long line, const char *error);
/* Text as a JSON string, never NULL: a byte that is not UTF-8 (a message
 * cut inside a character, an operator's reason in Latin-1) is shown as
 * U+FFFD, and the member is not lost. */
json_t *sr_json_text(const char *s);
/* Whether s is well-formed UTF-8. */
int sr_utf8_valid(const char *s);
/* Print obj as one compact JSON line on stdout and release it. */
void sr_emit(json_t *obj);
/* --table: sr_out keeps records (instead of printing JSONL) until
 * sr_table_flush prints their scalar members as aligned columns. */
void sr_table_mode(void);
void sr_out(json_t *obj);
/* Human times next to machine ones, in obj and the objects inside it: an
 * epoch-ms field X_ms (or X) gets X_at, its ISO-8601 time in UTC, and an
 * audit entry's stream id gets "at". Durations are left alone (an epoch
 * ms is at least 10^11). people: the epoch-ms fields are dropped, and the
 * times are sr_iso_people's (--table, in the local zone with --local). */
void sr_add_times(json_t *obj, int people);
void sr_table_flush(void);
/* Field accessors that tolerate absence; return NULL / dflt. */
const char *sr_jstr(json_t *obj, const char *key);
/* Whether a JSON array holds the string s. */
int sr_jarray_has(json_t *array, const char *s);
long long sr_jint(json_t *obj, const char *key, long long dflt);

/* --------------------------------------------------------------- sr_switch.c */

/* The global switch: 1 on (also when never set), 0 off, -1 Redis failed.
 * Append the reads of the switch (pipelined with a batch), then read them:
 * 1 on, 0 off, -1 on a lost connection or an error reply (errstr). */
void sr_switch_append(struct sr_redis *r, const struct sr_config *cfg);
int sr_switch_read(struct sr_redis *r);
int sr_switch_get(struct sr_redis *r, const struct sr_config *cfg);
/* Set it, audited with who and why in P:{global}:admin_audit. 0, or -1. */
int sr_switch_set(struct sr_redis *r, const struct sr_config *cfg, int on, const char *who,
    const char *why);

/* ----------------------------------------------------------------- sr_lock.c */

#define SR_TOKEN_MAX 64
/* Take the device lock for at most hold_ms, waiting up to wait_ms for it.
 * token (SR_TOKEN_MAX) receives our token. 1 taken, 0 busy, -1 Redis failed,
 * -2 Redis refused it (out of memory, read only; said in r->errstr). */
int sr_device_lock(struct sr_redis *r, const struct sr_config *cfg, const char *device, char *token,
    long hold_ms, long wait_ms);
/* Release it if it is still ours. 0, -1 when Redis failed, -2 when Redis
 * refused (r->errstr; the lock is held until its hold runs out), -3 when it
 * was no longer ours (r->errstr: its hold ran out under us). */
int sr_device_unlock(struct sr_redis *r, const struct sr_config *cfg, const char *device,
    const char *token);
/* Extend its hold to hold_ms from now if it is still ours: 1 extended, 0 no
 * longer ours, -1 Redis failed, -2 Redis refused (r->errstr). */
int sr_device_lock_extend(struct sr_redis *r, const struct sr_config *cfg, const char *device,
    const char *token, long hold_ms);

/* ------------------------------------------------------------------ sr_csv.c */

struct sr_csv;
struct sr_csv *sr_csv_new(int fd);
void sr_csv_free(struct sr_csv *c);
/* After EOF: 0, or an exit status after saying the input could not be read. */
int sr_csv_failed(const struct sr_csv *c);
/* 1 if the next row can be started without waiting (input buffered or
 * readable now, or at its end): a filter answers what it has otherwise. */
int sr_csv_ready(struct sr_csv *c);
/* Next data row as a new JSON object of strings keyed by the header (empty
 * cells left out); *line is the physical line the row starts on.
 * Returns 1 row, 0 end of input, -1 a bad row (err set; go on), -2 a bad
 * header (err set; stop). */
int sr_csv_next(struct sr_csv *c, json_t **row, long *line, char *err, size_t errlen);
/* Turn the string members named in names (NULL-terminated) into integers;
 * -1 with err set if one is not a non-negative integer. */
int sr_json_integers(json_t *obj, const char *const *names, char *err, size_t errlen);
/* Turn the string members named in names into flags: "0"/"1" into
 * integers, true/false/t/f (any case) into booleans; -1 with err set if one
 * is none of them. */
int sr_json_flags(json_t *obj, const char *const *names, char *err, size_t errlen);

/* ---------------------------------------------------------------- sr_valid.c */

/* Ids become parts of Redis keys and URLs: [A-Za-z0-9_.-]{1,64}. */
int sr_valid_id(const char *s);
/* Scenes and their priority class. */
enum sr_prio { SR_PRIO_HIGH = 0, SR_PRIO_NORMAL = 1, SR_PRIO_BULK = 2 };
/* Returns the scene's class, or -1 for an unknown scene. */
int sr_scene_prio(const char *scene);
/* Check that every key of obj is in the NULL-terminated list allowed; on
 * failure returns the offending key. */
const char *sr_unknown_key(json_t *obj, const char *const *allowed);


/* ---------------------------------------------------------------- sr_facts.c */

/* Rows of the facts table (sr_facts.c) at most. */
#define SR_FACTS_MAX 16
/* The facts the judgment reads. Absent numbers are 0, absent strings "". */
struct sr_card_facts {
	char carrier[65];
	char device[65];
	char status[16];     /* "active", "stopped" or "" (unknown) */
	char stopped_by[16]; /* "auto", "manual" or "" */
	long long pkg_expires_at;
	long long data_used_kb, data_quota_kb;
	int refunded;
	int known; /* any fact stored for this card */
	/* As of when each stored fact was true (ms; 0: stored without a time,
	 * older than any), by row of the facts table: what a write must not
	 * be older than (sr_card_facts_merge). */
	long long as_of[SR_FACTS_MAX];
};
struct sr_device_facts {
	int has_pkg; /* a device-level package exists (pkg_expires_at present) */
	long long pkg_expires_at;
	int disabled;
};
enum sr_fact_kind { SR_FACTS_CARD, SR_FACTS_DEVICE };
/* Load facts from an HGETALL reply (array of field/value). */
/* -1 when Redis answered an error (a key damaged by hand: a string where
 * the hash is), f left empty: never to be taken for "no facts". */
int sr_card_facts_load(struct sr_card_facts *f, const redisReply *hgetall);
int sr_device_facts_load(struct sr_device_facts *f, const redisReply *hgetall);
/* A fact's field in the facts hash ("st" for "status"); NULL for a name
 * that is not a fact. */
const char *sr_fact_field(const char *name);
/* A fact's name from its field ("pe" -> "pkg_expires_at"); field itself
 * when it is no fact's. */
const char *sr_fact_name(const char *field, enum sr_fact_kind kind);
/* The facts of a list of their fields ("pe,du"), by name, as a JSON array;
 * NULL when it names none. */
json_t *sr_facts_named(const char *list, enum sr_fact_kind kind);
/* Every fact's old name and field, in pairs, into argv (at most max
 * entries, for migrate_facts.lua). Returns how many. */
int sr_facts_renames(const char **argv, int max);
/* A facts hash (HGETALL's reply) as a JSON object under the facts' names,
 * numbers as numbers: what an operator reads. */
json_t *sr_facts_json(const redisReply *hgetall, enum sr_fact_kind kind);
/* Each fact's time and writer ('@' and '^' fields of a facts hash, kept by
 * facts_write.lua), as a JSON object under the facts' names:
 * {"pkg_expires_at":{"as_of_ms":1764756000000,"source":"sr-asset"}}; as_of_ms
 * is null for a fact stored without a time (and source, without a writer). */
json_t *sr_facts_times_json(const redisReply *hgetall, enum sr_fact_kind kind);
/* Lay a request's (checked) facts over the stored ones, as facts_write.lua
 * will write them: a fact older (as_of, ms; 0: now) than the stored one's
 * is left out. Its carrier is not a fact's. */
void sr_card_facts_merge(struct sr_card_facts *f, json_t *facts, long long as_of);
/* Whether a write of the card fact name as of as_of (ms; 0: now) is older
 * than the stored one, and facts_write.lua will leave it out. */
int sr_fact_older(const struct sr_card_facts *f, const char *name, long long as_of);
/* As of when the stored card fact name was true (ms; 0: no time). */
long long sr_fact_as_of(const struct sr_card_facts *f, const char *name);
/* Check that every member of obj, but those named in skip, is a fact a card
 * (or a device) may carry, with a valid value. -1 with err set. */
int sr_check_facts(json_t *obj, enum sr_fact_kind kind, const char *const *skip, char *err,
    size_t errlen);
/* The facts whose values are integers (for CSV cells, which are strings),
 * NULL-terminated. */
const char *const *sr_numeric_facts(void);
/* The facts that are flags (0 or 1), NULL-terminated. */
const char *const *sr_flag_facts(void);
/* A fact's value as Redis stores it (booleans as 0/1). */
void sr_fact_value(json_t *v, char *buf, size_t n);
/* The names of a card's (or a device's) facts, but skip, for a usage text:
 * wrapped before column 80 from column col, each new line starting with
 * indent. Static storage (the last two calls' results stay valid). */
const char *sr_facts_list(enum sr_fact_kind kind, const char *skip, int col, const char *indent);

/* ---------------------------------------------------------- sr_facts_write.c */

/* One write of facts (facts_write.lua): each fact as of its time, a fact
 * older than the stored one's not written. Filled by sr_facts_write_init
 * and _add (or _json), sent by _append, answered by sr_facts_written. */
struct sr_facts_write {
	char key[SR_KEY_MAX];
	long long as_of;     /* ms on the Redis clock; 0: now, when Redis takes it */
	const char *source;  /* who says so (a request's source, "sr-asset") */
	const char *carrier; /* a card's account (a card of another is refused); NULL: a device */
	int n;
	const char *field[SR_FACTS_MAX];
	char value[SR_FACTS_MAX][80]; /* "" deletes the fact (its time stays) */
};
void sr_facts_write_init(struct sr_facts_write *w, const char *key, long long as_of, const char *source,
    const char *carrier);
/* Add a fact by name, its value as Redis stores it. -1: not a fact, or full. */
int sr_facts_write_add(struct sr_facts_write *w, const char *name, const char *value);
/* Add every fact of a (checked) facts object but "carrier" and those in skip. */
void sr_facts_write_json(struct sr_facts_write *w, json_t *facts, const char *const *skip);
/* Writes gathered and sent in as few script calls as the layout allows
 * (sr_facts_batch_append): one on one server (up to 256 writes a call), one
 * per write on a cluster, where each card's facts are their own slot. Read
 * (sr_facts_batch_read: -1 Redis lost), each write's reply is
 * sr_facts_batch_reply's, valid until _reset. A zeroed struct is empty. */
struct sr_facts_batch {
	struct sr_facts_write *w;
	int n, cap;
	int calls;            /* script calls appended */
	redisReply **got;     /* their replies, once read */
	int ngot;
	const redisReply **rep; /* each write's reply, within got */
};
void sr_facts_batch_add(struct sr_facts_batch *b, const struct sr_facts_write *w);
void sr_facts_batch_append(struct sr_redis *rds, struct sr_facts_batch *b);
int sr_facts_batch_read(struct sr_redis *rds, struct sr_facts_batch *b);
#define sr_facts_batch_reply(b, i) ((b)->rep[i])
void sr_facts_batch_reset(struct sr_facts_batch *b);
void sr_facts_batch_free(struct sr_facts_batch *b);
/* Its reply: 0 written, *stale the names of the facts not written because
 * the stored ones are newer (a JSON array, NULL when none; the caller's to
 * decref); -2 the card is another account's (nothing written), -1 refused;
 * err says why. */
int sr_facts_written(const redisReply *rep, enum sr_fact_kind kind, json_t **stale, char *err,
    size_t errlen);

/* What srq learned at the carrier about a card (a call that applied, a
 * status query): its status, and stopped_by ("" deletes it; NULL leaves
 * it), as of as_of (0: now), added to a batch like any fact. */
void sr_facts_status_add(struct sr_facts_batch *b, const char *key, const char *carrier, const char *status,
    const char *stopped_by, long long as_of, const char *source);
/* A card whose write moved its device membership to device while its
 * device fact proved older than the stored one (a newer write named another
 * device meanwhile): its membership follows the stored fact again, so that
 * the stored device's evaluations find it. Synchronous (it is rare): 0, or
 * -1 Redis lost. */
int sr_device_membership_restore(struct sr_redis *rds, const char *prefix, const char *card,
    const char *device);
/* A record's "as_of" (a JSON number, epoch ms, or a string, sr_parse_as_of
 * without flag's words): ms, or -1 with err set. How far ahead of Redis's
 * clock it is is checked where that clock is read. */
long long sr_json_as_of(json_t *v, char *err, size_t errlen);
/* A tool's --as-of (sr_parse_as_of with the flag's words, on the Redis
 * clock): ms; a bad one ends the tool, exit 2. */
long long sr_as_of_option(struct sr_redis *rds, int redis_up, const char *opt);

/* ---------------------------------------------------------------- sr_judge.c */

enum sr_want { SR_WANT_NONE = 0, SR_WANT_STOP, SR_WANT_RESUME };
struct sr_judgment {
	int target_stopped; /* 1: the card should be stopped; 0: active */
	enum sr_want want;  /* the command the judgment asks for */
	const char *reason; /* refund, device_disabled, ..., entitled */
	int manual;         /* stopped by hand: never resumed automatically */
};
/* The one judgment (README: The judgment): pure, no I/O. dev may be NULL. now in
 * epoch seconds. */
struct sr_judgment sr_judge(const struct sr_card_facts *card, const struct sr_device_facts *dev,
    long long now);
const char *sr_want_name(enum sr_want w);
/* Does a queued action still agree with the judgment's direction? Used by
 * sr-exec's re-judgment: a stop is wanted while the target is stopped, a
 * resume while the target is active and the card was not stopped by hand. */
int sr_action_still_wanted(const char *action, const struct sr_card_facts *card,
    const struct sr_judgment *j);

/* ------------------------------------------------------------------ sr_why.c */
/* A pause that ends this far out (9999-12-31, admin_account.lua's
 * "forever") lasts until resumed. */
#define SR_FOREVER_MS 253402300799000LL
/* What sr-admin why looks at, read from Redis beforehand (times in Redis ms). */
struct sr_why_card {
	const char *card;
	const char *action;              /* NULL: no command */
	const struct sr_judgment *judged; /* with no command: the judgment now */
	const char *status;              /* with no command: the facts' status */
	long long superseded;            /* the version re-judged away before its call, or 0 */
	const char *dropped_who, *dropped_why; /* with no command: its last one dropped by hand */
	long long dropped_at;
	int frozen;
	const char *frozen_who, *frozen_why; /* frozen by hand */
	long long frozen_at, fails, first_fail;
	const char *last_error;
	const char *claim;
	long long lease_until;
	int called, confirming;
	long long due, last_call, interval_ms;
};
struct sr_why_account {
	const char *name;
	const char *limit_below_1;       /* "qps" or "running" when set below 1, else NULL */
	long limit_configured;           /* that limit's configured value (the profile's, SRQ_QPS) */
	long long pause_until;           /* 0: not paused */
	const char *pause_who, *pause_why;
	long long brk_until, brk_since;  /* brk_until 0: breaker closed */
	int brk_manual;
	const char *brk_why;
	long long next_slot;             /* the pace: when its next call may leave */
	double qps_effective;
	long qps;
};
/* Why the card is, or is not, about to be changed: its state (interval,
 * frozen, due, ...; README: Operations) and a sentence in buf, which ends
 * with the command that moves it, if an operator's (sr_why_run). Pure. */
const char *sr_why(const struct sr_why_card *c, const struct sr_why_account *a, long long now,
    char *buf, size_t n);
/* That command, for a card in state, in buf ("" if none): whole, as it
 * runs when pasted into a shell (its --reason a placeholder to edit). */
const char *sr_why_run(const struct sr_why_card *c, const struct sr_why_account *a, const char *state,
    char *buf, size_t n);

/* -------------------------------------------------------------- sr_profile.c */

/* A carrier profile (README, "Carrier profiles"). Numbers are -1 when the
 * profile leaves them to the environment's defaults. */
#define SR_PROFILE_MAX (64 * 1024)
#define SR_RULE_HTTP_MAX 8
/* A profile's requests; sr_req_name[r] is the prefix of its keys
 * ("stop.url", "poll.method"). poll: an accepted change's order, by its
 * txn ({txn}). */
enum { SR_REQ_STOP, SR_REQ_RESUME, SR_REQ_QUERY, SR_REQ_TOKEN, SR_REQ_POLL, SR_REQ_COUNT };
extern const char *const sr_req_name[SR_REQ_COUNT];
enum { SR_BODY_NONE, SR_BODY_JSON, SR_BODY_FORM, SR_BODY_TEXT };
enum { SR_SIGN_NONE, SR_SIGN_MD5, SR_SIGN_SHA256, SR_SIGN_HMAC_SHA256 };
/* What a rule makes of an answer. */
enum sr_verdict {
	SR_V_OK, SR_V_ALREADY, SR_V_IN_PROGRESS, /* applied / in state / accepted, lands later */
	SR_V_THROTTLE, SR_V_TOO_FREQUENT, SR_V_REFUSED, /* not applied: account rate, card window, other */
	SR_V_FAIL, SR_V_UNKNOWN, SR_V_REAUTH,    /* permanent, may have applied, authentication */
};
struct sr_request_tmpl {
	char *method, *url, *body;
	int type; /* SR_BODY_*: how placeholders in the body are escaped, and its Content-Type */
};
struct sr_rule {
	long http_lo[SR_RULE_HTTP_MAX], http_hi[SR_RULE_HTTP_MAX];
	int nhttp;        /* none: any status */
	char **codes;     /* any of these business codes (none: any) */
	int ncodes;
	char *msg, *body; /* substrings of the message / the body, or NULL */
	int verdict, line;
};
struct sr_var {
	char *name, *value;
	int secret; /* secret.NAME: file:PATH, env:NAME or literal; never printed */
};
struct sr_profile {
	char *name, *path;
	char **accounts; /* fnmatch patterns */
	int naccounts;
	long qps, running, burst, interval_ms, timeout_ms, connect_timeout_ms;
	long connect_budget_ms, keepalive_ms, poll_ms, settle_ms, aimd_memory_ms;
	long brk_failures, brk_window_ms, brk_cool_ms, brk_cool_max_ms, token_ttl_s;
	double aimd_inc, aimd_beta, aimd_noise, brk_ratio;
	long reserve_qps; /* the account's calls a second kept for srq's own (sr-rate) */
	struct sr_share { char *cls; double share; } *shares; /* max_share ("*") and max_share.CLASS */
	int nshares;
	int async;
	char *base, *reqid, *basic;
	struct sr_request_tmpl req[SR_REQ_COUNT];
	char **headers;
	int nheaders;
	struct sr_var *vars;
	int nvars;
	char *token_field, *token_ttl_field;
	int sign, sign_upper;
	char *sign_input, *sign_key;
	char *code_path, *msg_path, *state_path, *txn_path, *state_active, *state_stopped;
	/* The carrier's codes for a card whose change is still under way
	 * (state.pending; NULL: none): a query observes "pending". */
	char *state_pending;
	/* Where a change's (card) and a query's (query.card, else card) answer
	 * names its card; a path ending in '?' is checked only when present. */
	char *card_path, *qcard_path;
	/* Order polling: where a poll's answer says how the order stands, the
	 * codes of each verdict (poll.done, .failed, .pending), and where it
	 * names its card and its order (checked as card is). */
	char *poll_state, *poll_done, *poll_failed, *poll_pending, *poll_card, *poll_txn;
	struct sr_rule *rules, *qrules; /* qrules: query.rule, when a profile gives them */
	int nrules, nqrules;
};
/* Parse a profile's text; NULL with err set ("FILE: line N: ...") when bad.
 * dir is where 'from = NAME' finds NAME.profile (the built-in 'default'
 * needs none). */
struct sr_profile *sr_profile_parse(const char *text, const char *name, const char *file,
    const char *dir, char *err, size_t errlen);
void sr_profile_free(struct sr_profile *p);
/* The profile serving an account: the first in SRQ_PROFILES (name order)
 * whose 'accounts' match it, else the built-in default. Profiles are loaded
 * on first use; a bad profile is a configuration error (exit 2). */
const struct sr_profile *sr_profile_for(const struct sr_config *cfg, const char *carrier);
const char *sr_verdict_name(int verdict);
/* A rule outcome's name (ok, already, ...) as its verdict; -1 if none. */
int sr_verdict_parse(const char *name);

/* An account's resolved settings: its profile's, then the environment's. */
struct sr_account {
	char id[65];
	const struct sr_profile *p;
	long qps, running, burst, interval_ms, window_ms, lease_ms, timeout_ms, connect_timeout_ms;
	long connect_budget_ms, keepalive_ms, poll_ms, settle_ms, confirm_delay_ms;
	long alert_after, freeze_after, audit_max, aimd_memory_ms;
	long brk_failures, brk_window_ms, brk_cool_ms, brk_cool_max_ms;
	double aimd_inc, aimd_beta, aimd_noise, brk_ratio;
	long reserve_qps; /* 0: none */
	char *settings; /* the same, as the JSON the scripts take */
	struct sr_account *next;
};
/* The account's settings (cached per process). Never NULL. */
const struct sr_account *sr_account(const struct sr_config *cfg, const char *carrier);
void sr_accounts_free(void);
/* A claim's lease (SRQ_LEASE_MS) must outlast a call's whole timeout
 * (SRQ_GATEWAY_TIMEOUT_MS, or a profile's timeout_ms) by this much, so that
 * the result of a call that ran its whole timeout reaches sr-confirm before
 * another pipeline may claim the card again. */
#define SR_LEASE_MARGIN_MS 1000
/* Whether it does under profile p: 0, or -1 with err naming both settings. */
int sr_lease_check(const struct sr_config *cfg, const struct sr_profile *p, char *err, size_t errlen);
/* The same for every profile (the default one and SRQ_PROFILES'). */
int sr_lease_check_all(const struct sr_config *cfg, char *err, size_t errlen);
/* sr_lease_check_all, or exit 2 with its message (the tools that take
 * leases or make calls under them: sr-claim, sr-exec). */
void sr_lease_require(const struct sr_config *cfg);

/* A bounded text buffer for expansions. */
struct sr_buf {
	char *s;
	size_t len, cap;
};
/* Where an expanded value goes, and so how it is escaped. */
enum { SR_CTX_RAW, SR_CTX_URL, SR_CTX_JSON, SR_CTX_FORM, SR_CTX_HEADER };
/* Give the value of placeholder name (NULL: unknown); *raw = 1 to insert it
 * unescaped (a base URL). */
typedef const char *sr_lookup_fn(void *arg, const char *name, int *raw);
/* Expand {name} placeholders of tmpl into out, each value escaped for ctx.
 * Anything else, JSON braces included, is copied as it is. -1 with err. */
int sr_expand(const char *tmpl, int ctx, sr_lookup_fn *lookup, void *arg, struct sr_buf *out,
    char *err, size_t errlen);

/* A carrier's answer, read by a profile's rules. */
struct sr_answer {
	int verdict;        /* enum sr_verdict */
	int rule;           /* the line of the matching rule (0: none matched) */
	char code[64], msg[160], txn[64];
	char raw_state[32]; /* queries: the carrier's state code */
	char observed[16];  /* queries: active, stopped or other */
	char order[12];     /* polls: done, failed, pending or other ("": not read) */
	char card[65];      /* the card the answer names (card, query.card), if any */
	int mismatch;       /* it names another card (1) or order (2, its txn in txn), or
	                     * none where it must: not believed */
	char unread[120];   /* why the answer was not read at all (unknown, no rule asked) */
};
/* What a request asked: how its answer is read. */
enum sr_ask { SR_ASK_CHANGE, SR_ASK_QUERY, SR_ASK_POLL };
/* Classify the answer to a request about card (a change, a status query,
 * or a poll of the order txn); body holds body_len bytes (and a NUL after
 * them). A poll is read with the query's rules, its order's state by
 * poll.state; it must name this card and order where the profile says
 * (poll.card, poll.txn). A status that is
 * not final (not 200..599) or a body holding a NUL byte is not read:
 * unknown, with unread saying why. An answer that would say how the card
 * stands (ok, already, accepted, a state) but names another card, or none
 * where the profile says it must, is unknown, its mismatch set: never
 * believed of this card. */
void sr_classify(const struct sr_profile *p, long http, const char *body, size_t body_len,
    enum sr_ask ask, const char *card, const char *txn, struct sr_answer *a);
/* A carrier's body as JSON (a byte order mark and white space before it
 * skipped, duplicate keys refused), or NULL when it holds none. */
json_t *sr_answer_json(const char *body);
/* The text at a small path of a JSON answer ("a.b", "a[0].b") or of an XML
 * one ("xml:Tag"). 1 when found. */
int sr_answer_field(json_t *j, const char *body, const char *path, char *out, size_t outlen);
/* The token of a token fetch's answer (token.field, not empty) and how long
 * it lives in s (token.ttl_field, else token.ttl_s, else 1800). 1 when the
 * answer holds one. */
int sr_token_read(const struct sr_profile *p, json_t *j, const char *body, char *tok, size_t toklen,
    long *ttl_s);

/* -------------------------------------------------------------- sr_gateway.c */

/* What a process knows of one Redis server's clock against its monotonic
 * clock (sr_clock.c): bounds of offset = redis_ms - mono_ms, as of mono ms
 * at. */
struct sr_clock {
	int known;
	double lo, hi;
	int64_t at;
	long long since;      /* Redis ms of the last reading within the bounds */
	int stepped;          /* a forward step seen, not yet recorded */
	long step_lo, step_hi;
	long long step_since;
	/* every step this process saw, added up, and when the last was seen
	 * (mono ms): an account first gated since then was not recorded */
	long seen_lo, seen_hi;
	long long seen_since;
	int64_t seen_at;
};

/* Outcome classes of one gateway call: the "outcome" of a result record. */
enum sr_outcome {
	SR_OUT_OK, SR_OUT_ALREADY, SR_OUT_RETRY, SR_OUT_FAIL, SR_OUT_UNKNOWN,
	SR_OUT_SUPERSEDED, SR_OUT_BLOCKED,
};
const char *sr_outcome_name(enum sr_outcome o);

struct sr_edge;

struct sr_call {
	/* in */
	char card[65], carrier[65], action[8]; /* action: stop, resume, status, poll */
	long long ver;
	long long seq;          /* the account's call number from the gate ({seq}; 0: none) */
	void *user;
	/* out */
	enum sr_outcome outcome;
	const char *class;      /* a retry: throttled, too_frequent, refused, not_sent, auth;
	                         * an unknown: mismatch (the answer was about another card) */
	int verdict;            /* what the profile's rules said (SR_V_*), -1 before an answer */
	int in_progress;        /* ok, but the carrier only accepted the change */
	long http;
	char error[160];
	char observed[16];      /* for status: active/stopped/other */
	char raw_state[32], txn[64]; /* txn: a poll's order (in), else what a change's answer said */
	char order[12];         /* a poll's: done, failed, pending, other, or "" (not read) */
	char answer_card[65];   /* the card the answer named ("": none); with class
	                         * "mismatch", the one it was not believed of */
	long long retry_after_ms;
	long long ms;           /* duration of the call */
	int auth_gen;           /* the account's authentication it went out with */
	int cold;               /* it set up a new connection */
	/* private */
	struct sr_edge *edge;
	struct sr_origin *origin;
	int is_fetch, conn_close;
	int sends;              /* times libcurl was about to send the request */
	long status_seen;       /* the status of the last status line read (0: none) */
	int headers_done;       /* that answer's headers were read to their end */
	int local_fail;         /* not sent for a reason of ours: its request could not be built */
	char *sent_secrets[8];  /* copies of the secrets the request carries: redacted from
	                         * what the carrier says back (zeroed and freed at cleanup) */
	int nsent_secrets;
	void *easy, *headers;
	char *body, *reqbody;
	size_t body_len, reqlen, reqoff;
	int body_cut;           /* the answer's body ran past what is kept: not read */
	int64_t started;
};

/* The connections to one origin (scheme://host:port). libcurl keeps one pool
 * for the process and hands any idle connection to the next call to the same
 * origin, whatever its account: whether a call leaves on a warm connection is
 * a property of the origin's traffic, so it is counted here. */
#define SR_ORIGIN_CONNS 256
struct sr_origin {
	char name[200];
	int running;          /* calls running to it, all accounts */
	struct { long port; int64_t used; } conns[SR_ORIGIN_CONNS]; /* connections known alive */
	int nconns;
	struct sr_origin *next;
};

/* One account's side of the client: what it learned of its connections'
 * setup, its authentication. */
struct sr_edge {
	const struct sr_account *acct;
	struct sr_origin *origin; /* where its last call went (NULL: none yet) */
	int held;             /* calls holding a slot, not started yet (kept by the caller) */
	int running;          /* calls running */
	long cold_ms;         /* how much later than sent a call on a new connection may leave */
#define SR_EDGE_SETUPS 8
	long setups[SR_EDGE_SETUPS]; /* the last new connections' setup times, ms */
	int nsetups;
	long warm_ms;         /* the quickest answer on a warm connection (-1: none yet) */
	/* authentication */
	int auth_gen;         /* bumped by each re-authentication */
	int auth_failed;
	int64_t auth_failed_until; /* then a new fetch may be tried */
	const char *auth_class;    /* its calls' class: auth (refused), not_sent (unreachable) */
	char auth_error[200];
	char *token;          /* a fetched token, and until when it is used (mono ms) */
	int64_t token_until;
	long fetches;         /* tokens fetched */
	struct sr_call *fetch; /* the token fetch in flight */
	struct secret *secrets;
	int nsecrets;
	/* the Redis server's clock (sr_clock.c) */
	int clock_node;       /* the node its last gate ran on (-1: none yet) */
	int step;             /* a forward step of its clock seen, not yet recorded */
	long step_lo, step_hi;
	long long step_since;
	int saved_state;      /* the clock an earlier process saved: 0 not asked, 1 asked */
	struct sr_clock saved; /* known: for its first reading */
	/* How late its calls leave (sr_edge_late): a histogram of the lateness
	 * at send, in SR_LATE_BIN_MS steps, per ten seconds for the last minute;
	 * its p99 is the headroom reported to the account's edge. */
	struct sr_late_slice *late;  /* SR_LATE_SLICES of them, made on first use */
	long hr_sent;                /* the headroom last reported (0: none) */
	int64_t hr_sent_at;          /* when (mono ms) */
	struct sr_edge *next;
};

struct sr_gateway;
struct sr_gateway *sr_gateway_new(const struct sr_config *cfg);
void sr_gateway_free(struct sr_gateway *gw);
/* The account's side of the client (made on first use). */
struct sr_edge *sr_gateway_edge(struct sr_gateway *gw, const char *carrier);
/* Every account's side made so far: the first (e NULL), or the one after e;
 * NULL after the last. */
struct sr_edge *sr_gateway_edge_next(struct sr_gateway *gw, struct sr_edge *e);
/* How much later than its slot the account's next call may leave: 0 when a
 * warm connection is idle for it, else the setup time of a new one. */
long sr_edge_spread(struct sr_edge *e);
/* Right before a call leaves: if it leaves SR_LATE_MS or more after its
 * slot (mono ms) - a new connection to set up, or a late send - move the
 * account's pace by that much (late.lua), so the rate accounts for when it
 * really leaves. The send's lateness is counted too, and its p99 over the
 * last minute (SR_HR_MIN_MS..SR_HR_MAX_MS) is reported as the account's
 * headroom when it changes (at most once a second) and every 20 s while it
 * is above the floor, in the same round trip. -1 if Redis failed. */
#define SR_LATE_MS 3
#define SR_LATE_SLICES 6
#define SR_LATE_SLICE_MS 10000
#define SR_LATE_BIN_MS 5
#define SR_HR_MAX_MS 200
#define SR_LATE_BINS (SR_HR_MAX_MS / SR_LATE_BIN_MS + 1)
struct sr_late_slice {
	int64_t start; /* mono ms / SR_LATE_SLICE_MS */
	unsigned n[SR_LATE_BINS];
};
int sr_edge_late(struct sr_redis *r, const struct sr_config *cfg, struct sr_edge *e, int64_t slot);
/* Authentication: 1 ready, 0 waiting for a token (its fetch is started:
 * one for every waiting call), -1 failed (e->auth_error). */
int sr_edge_ready(struct sr_gateway *gw, struct sr_edge *e);
/* The carrier refused a call sent with authentication gen: re-authenticate
 * (secret files read again, a new token fetched), once for every call in
 * flight with that gen. */
void sr_edge_reauth(struct sr_edge *e, int gen);
/* Start a call (non-blocking). A request that cannot be built (a secret
 * file missing, a template error) finishes at once as retry/not_sent. */
void sr_gateway_start(struct sr_gateway *gw, struct sr_call *call);
/* Run transfers for up to timeout_ms (returns early when one finishes);
 * extra_fd >= 0 is also waited on. Returns finished calls one by one through
 * sr_gateway_done. */
void sr_gateway_poll(struct sr_gateway *gw, int timeout_ms, int extra_fd);
struct sr_call *sr_gateway_done(struct sr_gateway *gw);
int sr_gateway_running(struct sr_gateway *gw);
/* Check an account's profile as it would be used: every secret resolved
 * (reported as set, not set, or why it cannot be read; never its value),
 * every request built and sent nowhere. Fills report; -1 if any failed. */
int sr_edge_check(struct sr_gateway *gw, struct sr_edge *e, json_t *report);

/* ----------------------------------------------------------------- sr_sign.c */

/* {params}: the parameters a carrier receives - the URL's query string,
 * and a form body's fields or a JSON body's top-level strings and integers
 * (body NULL when none is sent) - each decoded, sorted by name then value,
 * joined "k=v&k=v" with nothing encoded, into out; a parameter whose name
 * or value holds skip (the signature's stand-in; NULL or "": none) left
 * out. 0, or -1 when it did not fit. */
int sr_params(const char *url, const char *body, int type, const char *skip, char *out,
    size_t outlen);
/* A request signature: the hex digest (SR_SIGN_MD5, SHA256, or
 * HMAC_SHA256 with key) of data, into out (129 bytes). 0, or -1. */
int sr_digest_hex(int alg, const char *key, size_t keylen, const char *data, size_t len, int upper,
    char *out);
/* Hex of a digest (2n+1 bytes in out). */
void sr_hex(const unsigned char *md, size_t n, char *out, int upper);

/* --------------------------------------------------------- sr_profile_test.c */

/* Replay recorded answers (JSONL at path, one a line: README, Onboarding a
 * new carrier) through profile p, each read as the pipeline reads it; one
 * record per case, then a summary, to emit. Every line is checked before
 * any is replayed. SR_EX_OK every case passed, SR_EX_REJECTED one did not
 * (each said on stderr with its line), SR_EX_USAGE the file unreadable,
 * empty or a line bad (each said with its line; nothing replayed). */
int sr_profile_replay(const struct sr_profile *p, const char *path, void (*emit)(json_t *));
/* One live status query for card, never a change, through account's side
 * of gw: built, authenticated (its token fetched first) and signed as any
 * call; what srq read of it (secrets redacted) in *out. SR_EX_OK when read
 * as a state, else SR_EX_REJECTED. */
int sr_profile_probe(struct sr_gateway *gw, const char *account, const char *card, json_t **out);

/* --------------------------------------------------------------- sr_redact.c */

/* Cut every secret (of 4 bytes or more) out of s, a text the carrier sent
 * back, wherever it is spelled raw, percent-encoded (either case of hex), with
 * + for a space, JSON-escaped (\/, \u0041), or any mix of those; and the
 * first 4 or more bytes of one that end s (cut short by its length). Each
 * run cut is said once as [secret]. s holds size bytes. */
void sr_redact(char *s, size_t size, char *const *secrets, int nsecrets);

/* ---------------------------------------------------------------- sr_clock.c */

/* One reading of the clock: now (Redis ms), asked at mono ms sent and
 * answered at mono ms replied. 1 when it is a forward step of more than
 * thr ms, certainly: *lo and *hi its size at least and at most (and the
 * bounds start again from the reading); else 0. */
int sr_clock_sample(struct sr_clock *c, long long now, int64_t sent, int64_t replied, long thr,
    long *lo, long *hi);
/* The smallest step acted on: the rate's headroom (SRQ_RATE_WINDOW_MS -
 * 1000, which absorbs a smaller one), at least SR_CLOCK_MIN_STEP_MS. */
#define SR_CLOCK_MIN_STEP_MS 10
long sr_clock_threshold(const struct sr_config *cfg);
/* A process's readings of every Redis node it gates on (indexes of
 * sr_redis_reply_from), and the steps seen not yet recorded. */
struct sr_clocks {
	struct sr_clock *node;
	int nnode;
	long thr;
	int ahead;            /* how far ahead a gate grants slots, ms */
	int pending;
	/* This host and its boot: a clock saved in Redis by an earlier process
	 * of the same boot is on the same monotonic clock. */
	char host[80], boot[40];
};
void sr_clocks_init(struct sr_clocks *cs, const struct sr_config *cfg, int ahead_ms);
void sr_clocks_free(struct sr_clocks *cs);
/* A reading of node's clock for no account in particular (a TIME). */
void sr_clocks_read(struct sr_clocks *cs, int node, long long now, int64_t sent, int64_t replied);
/* A gate reply for account e read node's clock: 1 when a step of the clock
 * its cards' times are on was seen and is not yet recorded. The reply's
 * passes were made on the stepped clock against the old times: not to be
 * sent. */
int sr_clocks_gated(struct sr_clocks *cs, struct sr_edge *e, int node, long long now, int64_t sent,
    int64_t replied);
/* Before e's first gate in this process: ask for the clock an earlier
 * process of this host's boot saved in its edge (sr_clocks_save), an HGET
 * appended to r before the gate, whose reply goes to sr_clocks_asked. 1 if
 * it was appended. */
int sr_clocks_ask(struct sr_clocks *cs, struct sr_redis *r, const struct sr_config *cfg,
    struct sr_edge *e);
void sr_clocks_asked(struct sr_clocks *cs, struct sr_edge *e, const redisReply *rep);
/* At the end: save for every account gated what is known of its node's
 * clock (its edge's clk:HOST), for the next process of this host's boot to
 * compare its first reading with: a step between two runs is found. */
void sr_clocks_save(struct sr_clocks *cs, struct sr_redis *r, const struct sr_config *cfg,
    struct sr_gateway *gw);
/* Record the steps seen (clock_step.lua) for every account whose last gate
 * ran on a node that stepped, or that moved to a node ahead of its old one;
 * one warning on stderr. who: the tool, for the audit. -1 if Redis failed. */
int sr_clocks_record(struct sr_clocks *cs, struct sr_redis *r, const struct sr_config *cfg,
    struct sr_gateway *gw, const char *who);

/* -------------------------------------------------------------- sr_command.c */

/* sr-claim, sr-stat, sr-sweep and sr-admin find accounts in P:accounts:
 * every account srq writes for is added there, once per process (an SADD
 * appended to r; 1 if one was). */
int sr_account_register(struct sr_redis *r, const struct sr_config *cfg, const char *carrier);
/* Redis refused that SADD: the next sr_account_register sends it again. */
void sr_account_forget(const char *carrier);

/* One card's judged intent, written by enqueue.lua (the only writer of
 * commands: sr-enqueue and dev-eval both go through here). */
#define SR_CMD_GROUP 256 /* cards per script call */
struct sr_cmd {
	const char *card, *carrier, *scene, *source;
	int prio;
	struct sr_judgment j;
	/* out: status queued|unchanged|cancelled|noop, or NULL and error set */
	const char *status;
	long long ver;
	char error[160];
	/* out: its account's registration refused (no claim finds it until a
	 * later request, or sr-sweep, registers the account), or "" */
	char warning[160];
};
struct sr_cmd_calls;
/* Append the script calls for n commands (pipelined, not flushed). The
 * returned handle is consumed by sr_cmds_collect. */
struct sr_cmd_calls *sr_cmds_append(struct sr_redis *r, const struct sr_config *cfg,
    struct sr_cmd **cmds, int n);
/* Read the replies, fill status/ver (or error) of each command, free the
 * handle. -1 when the connection failed (commands left without status). */
int sr_cmds_collect(struct sr_redis *r, struct sr_cmd_calls *c);
/* Add status, action, reason and ver of a written command to an ack. */
void sr_cmd_ack(json_t *o, const struct sr_cmd *m);

/* --------------------------------------------------------------- sr_direct.c */

/* One request executed on the spot (switch off). */
struct sr_dlock; /* sr_direct.c's */
struct sr_direct {
	/* in */
	const char *card, *carrier, *action; /* action: stop or resume */
	const char *device; /* take this device's lock first (device-level reason), or NULL */
	long long ver;      /* for the request id: card-ver-action */
	/* out */
	int ok;             /* the card is in the target state */
	int tries;          /* state-change calls made */
	char outcome[16], error[160];
	char unrecorded[200]; /* ok, but its status fact not written: why ('' written) */
	/* private */
	int state, queries, query_next, reauthed, resend;
	int to_record;      /* the answer says the card is there: its status is to write */
	struct sr_dlock *lk; /* the run's lock of its device, or NULL */
	const char *kind;   /* of the call in flight: call, query, resend */
	long long gated;    /* when its slot was granted (Redis ms) */
	long long slot;     /* the slot: the card's last call while it is in flight */
	char prev_call[24]; /* the card's last call before it ('' if none) */
	int64_t wake, started;
	struct sr_call call;
};
/* Run every request to its end: up to 3 tries 2 s apart, each through
 * direct_gate.lua; -1 if Redis failed (requests left unfinished). */
int sr_direct_run(struct sr_redis *r, struct sr_gateway *gw, const struct sr_config *cfg,
    struct sr_direct **v, int n);
/* After a run that failed: d's call was at the carrier (its result unknown). */
int sr_direct_in_flight(const struct sr_direct *d);

/* ----------------------------------------------------------------- sr_task.c */

/* Task and result records travel between sr-claim, sr-exec and sr-confirm. */
/* A task's "lane": enum sr_lane and sr_lane_name (sr_lua_gen.h), the order
 * an account's work is claimed and sent in, made from includes/lanes.lua. */
struct sr_task {
	char kind[8]; /* call or query */
	char card[65], carrier[65], action[8], token[64];
	char txn[64]; /* a query's: the order of the change it settles ("": none) */
	long long ver, attempt;
	enum sr_lane lane; /* its "lane"; without one, its kind's or its scene's */
};
/* Parse and validate a task line: 0, or -1 with err filled. "ver" and
 * "attempt" must be whole numbers (1.5 is not rounded). */
int sr_task_parse(json_t *obj, struct sr_task *t, char *err, size_t errlen);
/* The fields sr-exec adds to make a task a result, checked for type and
 * range when present: http (0..999), retry_after_ms, ms, at, gated (whole
 * numbers from 0), in_progress (a boolean), the text fields (strings). */
int sr_result_check(json_t *obj, char *err, size_t errlen);

#endif
