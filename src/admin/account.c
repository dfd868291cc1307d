/* admin/account.c - sr-admin's account commands: limits, pause and resume,
 * the breaker by hand, and the account's carrier profile. Every change is one
 * script (admin_account.lua), atomic with its audit entry. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "admin.h"

json_t *
account_state(const char *carrier)
{
	const struct sr_account *acct = sr_account(&cfg, carrier);
	char keys[SR_STAT_KEYS][SR_KEY_MAX], stats[SR_KEY_MAX];
	const char *argv[SR_STAT_KEYS + SR_STAT_ARGC], **a = argv + SR_STAT_KEYS;
	json_t *o = json_object();
	redisReply *rep;

	sr_keys_account(keys, argv, cfg.prefix, carrier, sr_lua_stat_keys);
	a[SR_STAT_ARGV_STATS] = sr_key_account(stats, cfg.prefix, carrier, "stats:");
	a[SR_STAT_ARGV_WINDOW] = "1";
	a[SR_STAT_ARGV_SETTINGS] = acct->settings;
	sr_redis_append_script(&rds, SR_LUA_STAT, SR_STAT_KEYS, SR_STAT_KEYS + SR_STAT_ARGC, argv, NULL);
	if (!(rep = sr_redis_reply(&rds)))
		sr_die(SR_EX_BACKEND, "%s", rds.errstr);
	if (rep->type != REDIS_REPLY_ARRAY)
		sr_die(SR_EX_BACKEND, "account '%s': %s", carrier,
		    rep->type == REDIS_REPLY_ERROR ? rep->str : "unexpected reply");
	json_object_set_new(o, "carrier", json_string(carrier));
	json_object_set_new(o, "profile", json_string(acct->p->name));
	for (size_t i = 0; i + 1 < rep->elements; i += 2) {
		const char *k = rep->element[i]->str;
		long long v = rep->element[i + 1]->integer;

		if (!strcmp(k, "qps") || !strcmp(k, "burst") || !strcmp(k, "max_running") ||
		    !strcmp(k, "queued") || !strcmp(k, "due") || !strcmp(k, "claimed") ||
		    !strcmp(k, "frozen") || !strcmp(k, "confirming"))
			json_object_set_new(o, !strcmp(k, "max_running") ? "running" : k, json_integer(v));
		else if (!strcmp(k, "qps_effective_milli"))
			json_object_set_new(o, "qps_effective", json_real(v / 1000.0));
		else if (!strcmp(k, "headroom_ms"))
			json_object_set_new(o, k, json_integer(v));
		else if (!strcmp(k, "paused_until_ms") || !strcmp(k, "breaker_since_ms") ||
		    !strcmp(k, "breaker_until_ms"))
			json_object_set_new(o, k, v > 0 ? json_integer(v) : json_null());
		else if (!strcmp(k, "breaker"))
			json_object_set_new(o, k, json_string(v == 1 ? "open" : v == 2 ? "half_open" : "closed"));
	}
	json_object_set_new(o, "interval_ms", json_integer(acct->interval_ms));
	freeReplyObject(rep);
	return o;
}

/* What sr_why needs of the account, read once per account per run (why -
 * over many cards of one account reads it once). Its strings live as long
 * as the process. */
const struct sr_why_account *
account_why_load(const char *carrier)
{
	static struct cache {
		struct sr_why_account a;
		json_t *edge, *state;
	} *cache;
	static size_t ncache;
	char key[SR_KEY_MAX], lkey[SR_KEY_MAX];
	const char *argv[] = { "HGETALL", sr_key_account(key, cfg.prefix, carrier, "edge") };
	const char *largv[] = { "HGETALL", sr_key_account(lkey, cfg.prefix, carrier, "limits") };
	struct sr_why_account *a;
	redisReply *rep;
	json_t *e, *lim;

	for (size_t i = 0; i < ncache; i++)
		if (!strcmp(cache[i].a.name, carrier))
			return &cache[i].a;
	cache = sr_realloc(cache, (ncache + 1) * sizeof *cache);
	a = &cache[ncache].a;
	memset(a, 0, sizeof *a);
	a->name = sr_strdup(carrier);
	e = hash_obj(rep = cmd(2, argv));
	freeReplyObject(rep);
	lim = hash_obj(rep = cmd(2, largv));
	freeReplyObject(rep);
	if (json_object_get(lim, "qps") && jnum(lim, "qps") < 1) {
		a->limit_below_1 = "qps";
		a->limit_configured = sr_account(&cfg, carrier)->qps;
	} else if (json_object_get(lim, "running") && jnum(lim, "running") < 1) {
		a->limit_below_1 = "running";
		a->limit_configured = sr_account(&cfg, carrier)->running;
	}
	json_decref(lim);
	a->pause_until = (long long)jnum(e, "pause_until");
	a->pause_who = sr_jstr(e, "pause_who");
	a->pause_why = sr_jstr(e, "pause_why");
	a->brk_until = (long long)jnum(e, "brk_until");
	a->brk_since = (long long)jnum(e, "brk_since");
	a->brk_manual = json_object_get(e, "brk_manual") != NULL;
	a->brk_why = sr_jstr(e, "brk_why");
	a->next_slot = (long long)jnum(e, "tat");
	cache[ncache].edge = e;
	cache[ncache].state = NULL;
	if (a->next_slot > 0) { /* the pace's figures, for the rate sentence */
		json_t *st = account_state(carrier);

		a->qps_effective = jnum(st, "qps_effective");
		a->qps = (long)jnum(st, "qps");
		cache[ncache].state = st;
	}
	ncache++;
	return a;
}

/* One change of the account (admin_account.lua): 1 made, 0 the account
 * already was so (nothing written). A refusal ends sr-admin (exit 1, or 3
 * when Redis refused). */
static int
change(const char *op, const char *account, int nargs, const char **args)
{
	char k[SR_ADMIN_ACCOUNT_KEYS][SR_KEY_MAX], cap[24];
	const char *argv[SR_ADMIN_ACCOUNT_KEYS + SR_ADMIN_ACCOUNT_ARGC + 8];
	const char **a = argv + SR_ADMIN_ACCOUNT_KEYS;
	redisReply *rep;
	int n = SR_ADMIN_ACCOUNT_KEYS + SR_ADMIN_ACCOUNT_ARGC, changed;

	need_reason(op);
	snprintf(cap, sizeof cap, "%ld", cfg.audit_maxlen);
	sr_keys_account(k, argv, cfg.prefix, account, sr_lua_admin_account_keys);
	a[SR_ADMIN_ACCOUNT_ARGV_OPERATION] = op;
	a[SR_ADMIN_ACCOUNT_ARGV_ACCOUNT] = account;
	a[SR_ADMIN_ACCOUNT_ARGV_WHO] = who;
	a[SR_ADMIN_ACCOUNT_ARGV_WHY] = reason;
	a[SR_ADMIN_ACCOUNT_ARGV_AUDIT_MAX] = cap;
	/* (the operation's own arguments, ARGV_ARGS on) */
	for (int i = 0; i < nargs && n < (int)(sizeof argv / sizeof argv[0]); i++)
		argv[n++] = args[i];
	sr_redis_append_script(&rds, SR_LUA_ADMIN_ACCOUNT, SR_ADMIN_ACCOUNT_KEYS, n, argv, NULL);
	if (!(rep = sr_redis_reply(&rds)))
		sr_die(SR_EX_BACKEND, "%s", rds.errstr);
	if (rep->type == REDIS_REPLY_ERROR) {
		/* Refused by the script (the account is not in that state), or by
		 * Redis itself (out of memory, a read-only replica): either way
		 * nothing was changed, and the reason is said. */
		int backend = sr_redis_backend_error(rep->str);

		fprintf(stderr, "%s: account '%s': %s\n", sr_prog, account, rep->str);
		freeReplyObject(rep);
		sr_redis_close(&rds);
		exit(sr_finish(backend ? SR_EX_BACKEND : SR_EX_REJECTED));
	}
	changed = !(rep->type == REDIS_REPLY_STRING && !strcmp(rep->str, "unchanged"));
	freeReplyObject(rep);
	/* An account set up before its first request (--force) is known from
	 * now on, wherever accounts are listed (sr-stat, limits, alerts): its
	 * limits or its pause are not set for an account nobody sees. */
	if (changed && sr_account_register(&rds, &cfg, account)) {
		if (!(rep = sr_redis_reply(&rds)))
			sr_die(SR_EX_BACKEND, "%s", rds.errstr);
		if (rep->type == REDIS_REPLY_ERROR)
			sr_warn("account '%s': changed, but not listed among the accounts: %s", account, rep->str);
		freeReplyObject(rep);
	}
	return changed;
}

/* The account's state after a change: "changed" says whether it was one
 * (false: it already was as asked, and a script may go on). */
static int
changed_state(const char *account, int changed)
{
	json_t *o = account_state(account);

	json_object_set_new(o, "changed", json_boolean(changed));
	sr_out(o);
	return SR_EX_OK;
}

/* The command's first argument (the command table counted them): an
 * account id, or a usage error. */
static const char *
account_arg(char **argv)
{
	if (!sr_valid_id(argv[0]))
		command_usage();
	return argv[0];
}

void
known_account(const char *account, int change)
{
	char key[SR_KEY_MAX];
	const char *argv[] = { "SISMEMBER", sr_key_accounts(key, cfg.prefix), account };
	redisReply *rep;
	int known;

	if (change && force_opt)
		return;
	rep = cmd(3, argv);
	known = rep->type == REDIS_REPLY_INTEGER && rep->integer == 1;
	freeReplyObject(rep);
	if (!known) {
		fprintf(stderr, "%s: account '%s' is unknown: no request ever named it (a typo?)%s\n", sr_prog,
		    account, change ? "; give --force to change it anyway" : "");
		sr_redis_close(&rds);
		exit(sr_finish(SR_EX_REJECTED));
	}
}

int
admin_limits(int argc, char **argv)
{
	const char *account = account_arg(argv);
	const char *args[6];
	int n = 0;

	for (int i = 1; i < argc; i++) {
		char *eq = strchr(argv[i], '=');
		long v;

		if (!eq || n == 6 || (strncmp(argv[i], "qps=", 4) && strncmp(argv[i], "running=", 8) &&
		    strncmp(argv[i], "burst=", 6)))
			sr_die(SR_EX_USAGE, "limits: '%s' is not qps=N, running=N or burst=N", argv[i]);
		if ((v = sr_parse_long(eq + 1)) < 1 || v > 1000000)
			sr_die(SR_EX_USAGE, "limits: '%s': a limit is a whole number from 1 to 1000000 "
			    "(0 would mean no limit; to stop calls to the account use "
			    "'sr-admin pause %s')", argv[i], account);
		*eq = '\0';
		args[n++] = argv[i];
		args[n++] = eq + 1;
	}
	/* A view of an unknown account would show the defaults as if set. */
	known_account(account, n > 0);
	if (n)
		return changed_state(account, change("limits", account, n, args));
	sr_out(account_state(account));
	return SR_EX_OK;
}

int
admin_pause(int argc, char **argv)
{
	const char *account = account_arg(argv);
	char until[24] = "";
	const char *args[1] = { until };

	(void)argc;
	if (until_opt) {
		int64_t now = sr_redis_time_ms(&rds);

		if (now < 0)
			sr_die(SR_EX_BACKEND, "%s", rds.errstr);
		snprintf(until, sizeof until, "%lld", (long long)sr_time_option("--until", until_opt, now, 1,
		    "(30m, 2h, 2026-12-01T10:00Z, 2026-12-01 18:00 in TZ, or epoch ms)"));
	}
	known_account(account, 1);
	return changed_state(account, change("pause", account, 1, args));
}

int
admin_resume(int argc, char **argv)
{
	const char *account = account_arg(argv);

	(void)argc;
	known_account(account, 1); /* a typo must not pass for "not paused" */
	return changed_state(account, change("resume", account, 0, NULL));
}

int
admin_breaker(int argc, char **argv)
{
	const char *account = account_arg(argv);

	if (argc == 2 && !strcmp(argv[1], "open")) {
		known_account(account, 1);
		return changed_state(account, change(argv[1], account, 0, NULL));
	}
	if (argc == 2 && !strcmp(argv[1], "close")) {
		known_account(account, 1);
		return changed_state(account, change(argv[1], account, 0, NULL));
	}
	if (argc != 1)
		command_usage();
	known_account(account, 0); /* a view: a closed breaker of a typo is no news */
	sr_out(account_state(account));
	return SR_EX_OK;
}

/* A secret's source as it may be shown: its file: and env: alternatives
 * (where the value comes from), never a literal one (the value itself). */
static json_t *
secret_source(const char *spec)
{
	char copy[1024], out[1024] = "", *alt, *save;

	snprintf(copy, sizeof copy, "%s", spec);
	for (alt = strtok_r(copy, " \t", &save); alt; alt = strtok_r(NULL, " \t", &save))
		snprintf(out + strlen(out), sizeof out - strlen(out), "%s%s", out[0] ? " " : "",
		    !strncmp(alt, "file:", 5) || !strncmp(alt, "env:", 4) || !strncmp(alt, "env-file:", 9) ?
		    alt : "(redacted)");
	return json_string(out);
}

/* A header or credentials template as it may be shown: a credential
 * written literally (no placeholder in it) is redacted. */
static json_t *
shown_template(const char *t, int credential)
{
	const char *v = strchr(t, ':');
	char out[1024];

	if (!v || strchr(v, '{') || !credential)
		return json_string(t);
	snprintf(out, sizeof out, "%.*s: (redacted)", (int)(v - t), t);
	return json_string(out);
}

static int
credential_header(const char *h)
{
	static const char *const words[] = { "auth", "token", "key", "secret", "sign", "pass", "cookie",
		NULL };
	char name[128];
	size_t n = strcspn(h, ":");

	snprintf(name, sizeof name, "%.*s", (int)(n < sizeof name - 1 ? n : sizeof name - 1), h);
	for (char *c = name; *c; c++)
		*c = (char)tolower((unsigned char)*c);
	for (int i = 0; words[i]; i++)
		if (strstr(name, words[i]))
			return 1;
	return 0;
}

const char *test_opt, *probe_opt;

static void
emit(json_t *o)
{
	sr_out(o);
}

/* --probe CARD: one live status query, and how srq read it. */
static int
profile_probe(const char *account)
{
	struct sr_gateway *gw;
	json_t *rec;
	int status;

	sr_gateway_url_check(&cfg);
	gw = sr_gateway_new(&cfg);
	status = sr_profile_probe(gw, account, probe_opt, &rec);
	sr_out(rec);
	sr_gateway_free(gw);
	return status;
}

/* The account's profile as resolved, secrets redacted, and checked. */
static int
profile_show(const char *account)
{
	const struct sr_account *a = sr_account(&cfg, account);
	const struct sr_profile *p = a->p;
	struct sr_gateway *gw = sr_gateway_new(&cfg);
	json_t *o = json_object(), *lim, *req = json_object(), *vars = json_object(), *rules = json_array();
	json_t *check = json_object();
	char err[1024];
	int bad, lease;

	json_object_set_new(o, "carrier", json_string(account));
	json_object_set_new(o, "profile", json_string(p->name));
	json_object_set_new(o, "file", json_string(p->path));
	lim = json_pack("{sI sI sI sI sI sI sI sI sI sI sb sI sI}", "qps", (json_int_t)a->qps,
	    "burst", (json_int_t)a->burst, "max_inflight", (json_int_t)a->running,
	    "interval_ms", (json_int_t)a->interval_ms, "timeout_ms", (json_int_t)a->timeout_ms,
	    "connect_timeout_ms", (json_int_t)a->connect_timeout_ms,
	    "connect_budget_ms", (json_int_t)a->connect_budget_ms, "keepalive_ms",
	    (json_int_t)a->keepalive_ms, "poll_ms", (json_int_t)a->poll_ms, "settle_ms",
	    (json_int_t)a->settle_ms, "async", p->async, "breaker_failures", (json_int_t)a->brk_failures,
	    "breaker_cooldown_ms", (json_int_t)a->brk_cool_ms);
	json_object_set_new(lim, "aimd_increase", json_real(a->aimd_inc));
	json_object_set_new(lim, "aimd_decrease", json_real(a->aimd_beta));
	json_object_set_new(lim, "aimd_noise", json_real(a->aimd_noise));
	json_object_set_new(lim, "reserve_qps", json_integer(a->reserve_qps));
	{
		/* Every other caller's class (sr-rate): "*" for those the profile does not name. */
		json_t *sh = json_object();

		json_object_set_new(sh, "*", json_real(1));
		for (int i = 0; i < p->nshares; i++)
			json_object_set_new(sh, p->shares[i].cls, json_real(p->shares[i].share));
		json_object_set_new(lim, "max_share", sh);
	}
	json_object_set_new(o, "limits", lim);
	json_object_set_new(o, "base", json_string(p->base ? p->base : "{gateway}"));
	for (int r = 0; r < SR_REQ_COUNT; r++)
		if (p->req[r].url)
			json_object_set_new(req, sr_req_name[r], json_pack("{ss ss ss?}", "method", p->req[r].method,
			    "url", p->req[r].url, "body", p->req[r].body));
	json_object_set_new(o, "requests", req);
	{
		json_t *hs = json_array();

		for (int i = 0; i < p->nheaders; i++)
			json_array_append_new(hs, shown_template(p->headers[i],
			    credential_header(p->headers[i])));
		json_object_set_new(o, "headers", hs);
	}
	for (int i = 0; i < p->nvars; i++)
		json_object_set_new(vars, p->vars[i].name, json_pack("{so sb}", "value",
		    p->vars[i].secret ? secret_source(p->vars[i].value) : json_string(p->vars[i].value),
		    "secret", p->vars[i].secret));
	json_object_set_new(o, "vars", vars);
	if (p->basic)
		json_object_set_new(o, "basic", shown_template(p->basic, 1));
	for (int i = 0; i < p->nrules; i++)
		json_array_append_new(rules, json_pack("{sI ss}", "line", (json_int_t)p->rules[i].line,
		    "outcome", sr_verdict_name(p->rules[i].verdict)));
	json_object_set_new(o, "rules", rules);
	/* How a status query's state is read: the carrier's codes for each. */
	json_object_set_new(o, "states", json_pack("{ss ss ss}", "active", p->state_active,
	    "stopped", p->state_stopped, "pending", p->state_pending ? p->state_pending : ""));
	/* How a poll reads an order: the carrier's codes for each verdict. */
	if (p->req[SR_REQ_POLL].url)
		json_object_set_new(o, "orders", json_pack("{ss ss ss ss}", "state", p->poll_state,
		    "done", p->poll_done, "failed", p->poll_failed ? p->poll_failed : "",
		    "pending", p->poll_pending ? p->poll_pending : ""));
	bad = sr_edge_check(gw, sr_gateway_edge(gw, account), check) < 0;
	/* A call that outlives its claim's lease is asked again: sr-claim and
	 * sr-exec refuse the profile, and so does its check (exit 2). */
	lease = sr_lease_check(&cfg, p, err, sizeof err) < 0;
	json_object_set_new(check, "lease", json_string(lease ? err : "ok"));
	json_object_set_new(o, "check", check);
	json_object_set_new(o, "ok", json_boolean(!bad && !lease));
	sr_out(o);
	sr_gateway_free(gw);
	if (lease) {
		fprintf(stderr, "%s: %s\n", sr_prog, err);
		return SR_EX_USAGE;
	}
	if (bad)
		fprintf(stderr, "%s: profile '%s' for account '%s' does not check out: see \"check\"\n",
		    sr_prog, p->name, account);
	return bad ? SR_EX_REJECTED : SR_EX_OK;
}

int
admin_profile(int argc, char **argv)
{
	const char *account;

	(void)argc;
	if (test_opt && probe_opt)
		sr_die(SR_EX_USAGE, "--test and --probe: one at a time; usage: sr-admin %s", running->usage);
	account = account_arg(argv);
	if (test_opt)
		return sr_profile_replay(sr_account(&cfg, account)->p, test_opt, emit);
	if (probe_opt)
		return profile_probe(account);
	return profile_show(account);
}
