/* admin/alerts.c - sr-admin alerts: the alerts of every account (or one),
 * open ones unless --all, and their acknowledgement: one by its id, those
 * whose ids come on stdin, or every open one of an account (of a kind).
 *
 *   alerts [--all] [--type T] [--since TIME] [--carrier A]
 *   alerts --ack ID [--carrier A] | --ack - | --ack --carrier A [--type T]
 *
 * An alert's id is its entry's in its account's stream (ms-seq): accounts
 * that raised an alert in the same millisecond hold the same id, so an id
 * is acknowledged in the one account that holds it open, or in the one its
 * line or --carrier names, never in all of them. Each acknowledgement is
 * one script (alert_account.lua), atomic with its audit entry. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "admin.h"

const char *ack_opt, *type_opt;
int all_opt;

/* Each alert's "alert"; its cause, which --type matches, is KIND:subject. */
static const char *const kinds[] = { "failures", "frozen", "permanent", "state", "flapping",
	"amplification", "conflicts", "breaker", "carrier_mismatch", "clock_step", NULL };

/* Every account's name, from P:accounts. */
static redisReply *
accounts(void)
{
	char key[SR_KEY_MAX];
	const char *a[] = { "SMEMBERS", sr_key_accounts(key, cfg.prefix) };

	return cmd(2, a);
}

static int
by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The accounts (sorted) where the alert `id` is open. */
static size_t
alert_holders(redisReply *acc, const char *id, char ***names)
{
	size_t n = 0;

	*names = NULL;
	for (size_t k = 0; acc->type == REDIS_REPLY_ARRAY && k < acc->elements; k++) {
		char ok[SR_KEY_MAX];
		const char *a[] = { "HGETALL", sr_key_account(ok, cfg.prefix, acc->element[k]->str,
			"alerts_open") };
		redisReply *open = cmd_or_error(2, a);
		int held = 0;

		if (open->type == REDIS_REPLY_ERROR) /* damaged by hand: said, the others looked at */
			sr_warn("account '%s': open alerts not read: %s", acc->element[k]->str, open->str);

		for (size_t j = 0; open->type == REDIS_REPLY_ARRAY && j + 1 < open->elements; j += 2)
			held |= !strcmp(open->element[j + 1]->str, id);
		freeReplyObject(open);
		if (held) {
			*names = sr_realloc(*names, (n + 1) * sizeof **names);
			(*names)[n++] = acc->element[k]->str;
		}
	}
	if (n > 1)
		qsort(*names, n, sizeof **names, by_name);
	return n;
}

/* One acknowledgement script in account c: "ack" of an id, or "ack_all" of
 * a kind ("" every kind). Its reply (Redis lost, or refused: fatal). */
static redisReply *
ack_script(const char *c, const char *op, const char *what)
{
	char keys[SR_ALERT_ACCOUNT_KEYS][SR_KEY_MAX], maxlen[24];
	const char *x[SR_ALERT_ACCOUNT_KEYS + SR_ALERT_ACCOUNT_ARGC + 4];
	const char **a = x + SR_ALERT_ACCOUNT_KEYS, **args = a + SR_ALERT_ACCOUNT_ARGV_ARGS;
	redisReply *r;

	snprintf(maxlen, sizeof maxlen, "%ld", cfg.audit_maxlen);
	sr_keys_account(keys, x, cfg.prefix, c, sr_lua_alert_account_keys);
	a[SR_ALERT_ACCOUNT_ARGV_OPERATION] = op;
	a[SR_ALERT_ACCOUNT_ARGV_ACCOUNT] = c;
	/* ack and ack_all's own: what, who, why, the audit's cap */
	args[0] = what;
	args[1] = who;
	args[2] = reason;
	args[3] = maxlen;
	sr_redis_append_script(&rds, SR_LUA_ALERT_ACCOUNT, SR_ALERT_ACCOUNT_KEYS,
	    SR_ALERT_ACCOUNT_KEYS + SR_ALERT_ACCOUNT_ARGC + 4, x, NULL);
	if (!(r = sr_redis_reply(&rds)))
		sr_die(SR_EX_BACKEND, "%s", rds.errstr);
	if (r->type == REDIS_REPLY_ERROR)
		sr_die(SR_EX_BACKEND, "account '%s': acknowledging: %s", c, r->str);
	return r;
}

static void
acked(const char *id, const char *c, const char *cause)
{
	sr_out(json_pack("{ss ss ss}", "acked", id, "carrier", c, "cause", cause));
}

/* The alert id in account (NULL: the one account that holds it open):
 * 1 acknowledged; 0 not open (said); -1 open in several accounts, nothing
 * done (said). */
static int
ack_id(redisReply *acc, const char *id, const char *account)
{
	char **names = NULL;
	redisReply *r;
	int done = 0;

	/* Without an account named, the one that holds it, and no other:
	 * another master's clock may give a new alert the same id meanwhile. */
	if (!account) {
		char list[1024] = "";
		size_t n = alert_holders(acc, id, &names);

		for (size_t i = 0; i < n; i++)
			snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", names[i]);
		if (n > 1) {
			fprintf(stderr, "%s: alert '%s' is open in more than one account (%s): nothing "
			    "acknowledged; give --carrier A to say whose\n", sr_prog, id, list);
			free(names);
			return -1;
		}
		account = n ? names[0] : NULL;
	}
	if (account) {
		r = ack_script(account, "ack", id);
		if ((done = r->type == REDIS_REPLY_STRING))
			acked(id, account, r->str);
		freeReplyObject(r);
	}
	free(names);
	if (!done)
		fprintf(stderr, "%s: alert '%s' is not open%s%s%s\n", sr_prog, id, account ? " in account '" : "",
		    account ? account : "", account ? "'" : "");
	return done;
}

/* An alert id as its stream gives it: ms-seq. */
static int
valid_alert_id(const char *id)
{
	size_t ms = strspn(id, "0123456789");

	return ms > 0 && ms < 20 && id[ms] == '-' && id[ms + 1] && strspn(id + ms + 1, "0123456789") ==
	    strlen(id + ms + 1) && strlen(id + ms + 1) < 20;
}

/* --ack -: ids from stdin, one a line: an id, or a JSON object with "id"
 * (an alerts line) and maybe its account "carrier". */
static int
ack_stdin(redisReply *acc)
{
	struct sr_reader rd;
	char *line;
	long n = 0, not_open = 0, bad = 0;
	int rc;

	sr_reader_init(&rd, STDIN_FILENO);
	while ((rc = sr_reader_next(&rd, &line, 1)) != SR_READ_EOF) {
		json_t *j = NULL;
		const char *id = "", *account = carrier_opt;

		if (rc == SR_READ_BAD) {
			fprintf(stderr, "%s: line %ld: %s\n", sr_prog, rd.lineno, rd.why);
			bad++;
			continue;
		}
		if (line[0] == '{' && (j = json_loads(line, JSON_REJECT_DUPLICATES, NULL))) {
			id = sr_jstr(j, "id") ? sr_jstr(j, "id") : "";
			if (json_object_get(j, "carrier"))
				account = sr_jstr(j, "carrier");
		} else
			id = line;
		if (!id[0] && !j)
			; /* a blank line: nothing asked */
		else if (!valid_alert_id(id)) {
			fprintf(stderr, "%s: line %ld: '%s' is not an alert id (ms-seq, as sr-admin alerts "
			    "gives it)\n", sr_prog, rd.lineno, id);
			bad++;
		} else if (account && !sr_valid_id(account)) {
			fprintf(stderr, "%s: line %ld: \"carrier\" is not an account id: nothing done\n", sr_prog,
			    rd.lineno);
			bad++;
		} else if (carrier_opt && account && strcmp(account, carrier_opt)) {
			fprintf(stderr, "%s: line %ld: the line names account '%s', but --carrier says '%s': "
			    "nothing done\n", sr_prog, rd.lineno, account, carrier_opt);
			bad++;
		} else {
			int done = ack_id(acc, id, account);

			n += done > 0;
			not_open += done == 0;
			bad += done < 0;
		}
		json_decref(j);
	}
	rc = sr_reader_failed(&rd);
	sr_reader_free(&rd);
	fprintf(stderr, "%s: acknowledged %ld alert%s%s", sr_prog, n, n == 1 ? "" : "s", not_open || bad ?
	    " (" : "\n");
	if (not_open || bad)
		fprintf(stderr, "%ld not open, %ld refused)\n", not_open, bad);
	return sr_worst(rc, not_open || bad ? SR_EX_REJECTED : SR_EX_OK);
}

/* --ack --carrier A [--type T]: every open alert of A (of kind T). */
static int
ack_account(const char *account)
{
	redisReply *r;
	long n = 0;

	known_account(account, 0);
	r = ack_script(account, "ack_all", type_opt ? type_opt : "");
	for (size_t i = 0; r->type == REDIS_REPLY_ARRAY && i + 1 < r->elements; i += 2, n++)
		acked(r->element[i + 1]->str, account, r->element[i]->str);
	freeReplyObject(r);
	fprintf(stderr, "%s: acknowledged %ld %s%salert%s of account '%s'\n", sr_prog, n,
	    type_opt ? type_opt : "", type_opt ? " " : "", n == 1 ? "" : "s", account);
	return SR_EX_OK;
}

/* The alerts (with "open"): the open ones, or with --all every one, of
 * --type's kind only if given. */
static int
list(redisReply *acc)
{
	int status = SR_EX_OK;

	for (size_t k = 0; acc->type == REDIS_REPLY_ARRAY && k < acc->elements; k++) {
		const char *c = acc->element[k]->str;
		char ok[SR_KEY_MAX], sk[SR_KEY_MAX];
		const char *a[] = { "HGETALL", sr_key_account(ok, cfg.prefix, c, "alerts_open") };
		redisReply *open;
		json_t *alerts, *e;
		size_t i;

		if (carrier_opt && strcmp(carrier_opt, c))
			continue; /* --carrier: that account's alerts only */
		open = cmd_or_error(2, a);
		/* An account whose alerts Redis cannot read (a key damaged by
		 * hand) is said, and the others' are listed all the same. */
		if (open->type == REDIS_REPLY_ERROR ||
		    !(alerts = audit_entries(sr_key_account(sk, cfg.prefix, c, "alerts"), NULL, LIST_MAX))) {
			sr_warn("account '%s': alerts not read: %s", c,
			    open->type == REDIS_REPLY_ERROR ? open->str : entries_error);
			status = SR_EX_BACKEND;
			freeReplyObject(open);
			continue;
		}
		said_cut(alerts, "alerts", c);
		json_array_foreach(alerts, i, e) {
			int is_open = 0;

			for (size_t j = 0; open->type == REDIS_REPLY_ARRAY && j + 1 < open->elements; j += 2)
				is_open |= !strcmp(open->element[j + 1]->str, sr_jstr(e, "id"));
			if ((!is_open && !all_opt) || (type_opt && strcmp(sr_jstr(e, "alert") ?
			    sr_jstr(e, "alert") : "", type_opt)))
				continue;
			json_object_set_new(e, "carrier", json_string(c));
			json_object_set_new(e, "open", json_boolean(is_open));
			sr_out(json_incref(e));
		}
		json_decref(alerts);
		freeReplyObject(open);
	}
	return status;
}

int
admin_alerts(int argc, char **argv)
{
	redisReply *acc;
	int status, known = !type_opt;

	(void)argc;
	(void)argv;
	for (int i = 0; kinds[i] && !known; i++)
		known = !strcmp(type_opt, kinds[i]);
	if (!known)
		sr_die(SR_EX_USAGE, "--type: '%s' is not a kind of alert (failures, frozen, permanent, state, "
		    "flapping, amplification, conflicts, breaker, carrier_mismatch, clock_step)", type_opt);
	if (ack_opt) {
		need_reason("alerts --ack");
		/* Every open alert of every account at once is no operator's
		 * intent: the bulk form names its account. */
		if (!*ack_opt && !carrier_opt)
			sr_die(SR_EX_USAGE, "--ack with no ID acknowledges every open alert of an account: "
			    "say which with --carrier A (and --type T for one kind)");
		if (*ack_opt && type_opt)
			sr_die(SR_EX_USAGE, "--type: only with --ack --carrier A (every open alert of that kind), "
			    "or when listing; --ack %s names its alert", ack_opt);
		if (all_opt)
			sr_die(SR_EX_USAGE, "--all lists the closed alerts too; --ack acknowledges open ones");
		if (!*ack_opt)
			return ack_account(carrier_opt);
		if (strcmp(ack_opt, "-") && !valid_alert_id(ack_opt))
			sr_die(SR_EX_USAGE, "--ack: '%s' is not an alert id (ms-seq, as sr-admin alerts gives "
			    "it), nor - (ids on stdin)", ack_opt);
	}
	acc = accounts();
	if (!ack_opt)
		status = list(acc);
	else if (!strcmp(ack_opt, "-"))
		status = ack_stdin(acc);
	else {
		int done = ack_id(acc, ack_opt, carrier_opt);

		status = done > 0 ? SR_EX_OK : done < 0 ? SR_EX_USAGE : SR_EX_REJECTED;
	}
	freeReplyObject(acc);
	return status;
}
