/* admin/card.c - sr-admin retry, freeze and drop: one card at a time,
 * each one script (admin_card.lua) with its audit entry; the cards come
 * from the arguments or, for '-', from stdin (ids or JSON lines). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "admin.h"

/* The card's account: --carrier, or the asset mirror's. NULL if unknown. */
char *
card_carrier(const char *card)
{
	char key[SR_KEY_MAX];
	const char *argv[] = { "HMGET", sr_key_card_facts(key, cfg.prefix, card), sr_fact_field("carrier"),
		"carrier" };
	redisReply *rep;
	char *c = NULL;

	if (carrier_opt)
		return sr_strdup(carrier_opt);
	rep = cmd(4, argv);
	/* The short field, else the legacy one (before sr-admin migrate). */
	for (size_t i = 0; !c && rep->type == REDIS_REPLY_ARRAY && i < rep->elements; i++)
		if (rep->element[i]->type == REDIS_REPLY_STRING)
			c = sr_strdup(rep->element[i]->str);
	freeReplyObject(rep);
	return c;
}

/* The card has facts, or a state asleep in its account's idle bucket. */
static int
card_known(const char *card, const char *carrier)
{
	char fkey[SR_KEY_MAX], ikey[SR_KEY_MAX];
	const char *e[] = { "EXISTS", sr_key_card_facts(fkey, cfg.prefix, card) };
	const char *h[] = { "HEXISTS", ikey, sr_key_idle(ikey, cfg.prefix, carrier, card) };
	redisReply *a = cmd(2, e), *b = cmd(3, h);
	int known = (a->type == REDIS_REPLY_INTEGER && a->integer) || (b->type == REDIS_REPLY_INTEGER && b->integer);

	freeReplyObject(a);
	freeReplyObject(b);
	return known;
}

/* retry / freeze / drop one card: one script reads and writes the command
 * with its audit entry (share/lua/admin_card.lua). */
int
card_mutate(const char *what, const char *card, const char *account)
{
	char *carrier = account ? sr_strdup(account) : card_carrier(card);
	char keys[SR_ADMIN_CARD_KEYS][SR_KEY_MAX], maxlen[24];
	const char *argv[SR_ADMIN_CARD_KEYS + SR_ADMIN_CARD_ARGC], **a = argv + SR_ADMIN_CARD_KEYS;
	redisReply *rep;
	json_t *o;

	need_reason(what);
	if (!carrier) {
		fprintf(stderr, "%s: card '%s': no account known (give --carrier)\n", sr_prog, card);
		return SR_EX_REJECTED;
	}
	snprintf(maxlen, sizeof maxlen, "%ld", cfg.audit_maxlen);
	sr_keys_script(keys, argv, cfg.prefix, carrier, card, sr_lua_admin_card_keys);
	a[SR_ADMIN_CARD_ARGV_OPERATION] = what;
	a[SR_ADMIN_CARD_ARGV_CARD] = card;
	a[SR_ADMIN_CARD_ARGV_WHO] = who;
	a[SR_ADMIN_CARD_ARGV_WHY] = reason;
	a[SR_ADMIN_CARD_ARGV_AUDIT_MAX] = maxlen;
	sr_redis_append_script(&rds, SR_LUA_ADMIN_CARD, SR_ADMIN_CARD_KEYS,
	    SR_ADMIN_CARD_KEYS + SR_ADMIN_CARD_ARGC, argv, NULL);
	if (!(rep = sr_redis_reply(&rds)))
		sr_die(SR_EX_BACKEND, "%s", rds.errstr);
	/* A drop of a card that has no command leaves it as asked: no change,
	 * no error (a list piped in twice drops nothing the second time). A
	 * card nobody knows is still a typo. */
	if (rep->type == REDIS_REPLY_ERROR && !strcmp(rep->str, "no command") && !strcmp(what, "drop") &&
	    card_known(card, carrier)) {
		sr_out(json_pack("{ss ss ss sb}", "card", card, "carrier", carrier, "done", what, "changed", 0));
		freeReplyObject(rep);
		free(carrier);
		return SR_EX_OK;
	}
	if (rep->type == REDIS_REPLY_ERROR) {
		int backend = sr_redis_backend_error(rep->str);

		if (backend)
			fprintf(stderr, "%s: card '%s': %s refused by Redis: %s\n", sr_prog, card, what, rep->str);
		else
			fprintf(stderr, "%s: card '%s': %s to %s\n", sr_prog, card, rep->str, what);
		freeReplyObject(rep);
		free(carrier);
		return backend ? SR_EX_BACKEND : SR_EX_REJECTED;
	}
	if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 2 || rep->element[0]->type != REDIS_REPLY_STRING)
		sr_die(SR_EX_BACKEND, "card '%s': %s: unexpected reply from Redis", card, what);
	o = json_pack("{ss ss ss ss sI sb}", "card", card, "carrier", carrier, "done", what, "action",
	    rep->element[0]->str, "ver", (json_int_t)rep->element[1]->integer, "changed", 1);
	freeReplyObject(rep);
	sr_out(o);
	free(carrier);
	return SR_EX_OK;
}

/* A card line's "carrier" (NULL: none), checked against the card's account
 * (--carrier, or the asset mirror's; the line's when neither knows it): a
 * line naming another account must not act on the card where it is. NULL
 * if it may go on (*account: the account to use, or NULL), else why not. */
static const char *
line_account(json_t *line, const char *card, const char **account, char *why, size_t n)
{
	json_t *v = json_object_get(line, "carrier");
	const char *named = json_string_value(v);
	char *where;

	*account = NULL;
	if (!v)
		return NULL;
	if (!named || !sr_valid_id(named)) {
		snprintf(why, n, "\"carrier\" is not an account id: nothing done");
		return why;
	}
	if ((where = card_carrier(card)) && strcmp(where, named)) {
		if (carrier_opt)
			snprintf(why, n, "the line names account '%s', but --carrier says '%s': nothing done",
			    named, where);
		else
			snprintf(why, n, "the line names account '%s', but card '%s' is in '%s': nothing done",
			    named, card, where);
		free(where);
		return why;
	}
	free(where);
	*account = named;
	return NULL;
}

/* fn on each card: the arguments, and for '-' the lines of stdin (an id, or
 * a JSON object with "card" and, if it says, its account "carrier"). */
int
for_cards(int argc, char **argv, int (*fn)(const char *, const char *, const char *), const char *what)
{
	int status = SR_EX_OK;

	for (int i = 0; i < argc; i++) {
		if (strcmp(argv[i], "-")) {
			if (!sr_valid_id(argv[i])) {
				fprintf(stderr, "%s: '%s' is not a card id\n", sr_prog, argv[i]);
				status = sr_worst(status, SR_EX_REJECTED);
				continue;
			}
			status = sr_worst(status, fn(what, argv[i], NULL));
			continue;
		}
		{
			struct sr_reader rd;
			char *line;
			int rc;

			sr_reader_init(&rd, STDIN_FILENO);
			while ((rc = sr_reader_next(&rd, &line, 1)) != SR_READ_EOF) {
				json_t *j = NULL;
				const char *id = "", *account, *refused;
				char why[300];

				if (rc == SR_READ_BAD) {
					fprintf(stderr, "%s: line %ld: %s\n", sr_prog, rd.lineno, rd.why);
					status = sr_worst(status, SR_EX_REJECTED);
					continue;
				}
				/* The id as read, whole, until it is checked: one cut to
				 * fit a buffer would be another card's. */
				if (rc == SR_READ_LINE && line[0] == '{' && (j = json_loads(line, JSON_REJECT_DUPLICATES, NULL)) &&
				    sr_jstr(j, "card"))
					id = sr_jstr(j, "card");
				else if (rc == SR_READ_LINE)
					id = line;
				if (!id[0])
					; /* a blank line: nothing asked */
				else if (!sr_valid_id(id)) {
					fprintf(stderr, "%s: line %ld: '%s' is not a card id\n", sr_prog, rd.lineno, id);
					status = sr_worst(status, SR_EX_REJECTED);
				} else if ((refused = line_account(j, id, &account, why, sizeof why))) {
					json_t *o = json_pack("{sI ss so}", "line", (json_int_t)rd.lineno, "card", id,
					    "carrier", json_incref(json_object_get(j, "carrier")));

					status = sr_worst(status, sr_rejected(o, rd.lineno, refused));
					sr_out(o);
				} else
					status = sr_worst(status, fn(what, id, account));
				json_decref(j);
			}
			status = sr_worst(status, sr_reader_failed(&rd));
			sr_reader_free(&rd);
		}
	}
	return status;
}

static int
do_mutate(const char *what, const char *card, const char *account)
{
	return card_mutate(what, card, account);
}

static int
mutate(const char *what, int argc, char **argv)
{
	return for_cards(argc, argv, do_mutate, what);
}

int
admin_retry(int argc, char **argv)
{
	if (argc == 0) /* its bare form: the table let no other through */
		return admin_retry_account(account_opt);
	return mutate("retry", argc, argv);
}

int admin_freeze(int argc, char **argv) { return mutate("freeze", argc, argv); }
int admin_drop(int argc, char **argv) { return mutate("drop", argc, argv); }
