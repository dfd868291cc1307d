/* admin/show.c - sr-admin show and why: a card's state, read whole (its
 * command, or its state asleep in its idle bucket, its facts, its queue),
 * and why it is or is not about to be changed (sr_why). Read only. */
#include <stdlib.h>
#include <string.h>

#include "admin.h"

/* A field as a whole number (0: absent). */
static long long
hint(json_t *o, const char *k)
{
	return (long long)jnum(o, k);
}

/* A packed value (a sleeping card's state, sr_key_idle, or its waiting
 * command, sr_key_wait) into o, as its hash's fields would be. */
static void
idle_fields(json_t *o, const char *packed, const char *const *fields)
{
	char v[128];

	int wait = fields == sr_wait_fields;

	for (int i = 0; fields[i]; i++)
		if ((wait ? sr_wait_get : sr_idle_get)(packed, i, v, sizeof v))
			json_object_set_new(o, fields[i], field_value(fields[i], v));
	if (wait && !json_object_get(o, "source"))
		json_object_set_new(o, "source", json_string("")); /* as its hash has it */
}

/* Everything about one card, for show and why. */
static json_t *
card_state(const char *card, const char *carrier, long long *now_ms, int history)
{
	static const char *qs[] = { "stop_resume:high", "stop_resume", "stop_resume:bulk" };
	char key[SR_KEY_MAX], fkey[SR_KEY_MAX], zkey[SR_KEY_MAX];
	json_t *o = json_object(), *command, *audit;
	redisReply *rep;
	long long last;

	*now_ms = sr_redis_time_ms(&rds);
	json_object_set_new(o, "card", json_string(card));
	json_object_set_new(o, "carrier", json_string(carrier));
	/* The card's hash, or with none, its packed state in its idle bucket.
	 * A card can wake (bucket to hash) between the two reads, and then
	 * neither has it: read again, a few times, rather than show version 0. */
	for (int tries = 0;; tries++) {
		const char *a[] = { "HGETALL", sr_key_card(key, cfg.prefix, carrier, card) };
		int found = 1;

		command = hash_obj(rep = cmd(2, a));
		if (rep->type == REDIS_REPLY_ARRAY && rep->elements == 0) {
			char wkey[SR_KEY_MAX];
			const char *field = sr_key_idle(key, cfg.prefix, carrier, card);
			const char *b[] = { "HGET", key, field }, *c[] = { "HGET", wkey, field };
			redisReply *v, *w;

			sr_key_wait(wkey, cfg.prefix, carrier, card);
			v = cmd(3, b);
			w = cmd(3, c);
			if (v->type == REDIS_REPLY_STRING)
				idle_fields(command, v->str, sr_idle_fields);
			if (w->type == REDIS_REPLY_STRING) /* its command, waiting packed */
				idle_fields(command, w->str, sr_wait_fields);
			found = v->type == REDIS_REPLY_STRING || w->type == REDIS_REPLY_STRING;
			freeReplyObject(v);
			freeReplyObject(w);
		}
		freeReplyObject(rep);
		if (found || tries == 2)
			break;
		json_decref(command); /* a card never seen, or one that just woke */
	}
	{
		const char *a[] = { "HGETALL", sr_key_card_facts(fkey, cfg.prefix, card) };

		json_object_set_new(o, "facts", sr_facts_json(rep = cmd(2, a), SR_FACTS_CARD));
		/* Each fact as of when, and who said so. */
		json_object_set_new(o, "facts_as_of", sr_facts_times_json(rep, SR_FACTS_CARD));
		freeReplyObject(rep);
	}
	for (int q = 0; q < 3; q++) {
		const char *a[] = { "ZSCORE", sr_key_account(zkey, cfg.prefix, carrier, qs[q]), card };

		rep = cmd(3, a);
		if (rep->type == REDIS_REPLY_STRING) {
			json_object_set_new(o, "queue", json_string(qs[q]));
			json_object_set_new(o, "due_ms", json_integer(atoll(rep->str)));
		}
		freeReplyObject(rep);
	}
	last = hint(command, "last_call");
	json_object_set_new(o, "ver", json_integer(hint(command, "ver")));
	json_object_set_new(o, "last_call_ms", last ? json_integer(last) : json_null());
	{
		long interval = sr_account(&cfg, carrier)->interval_ms;

		json_object_set_new(o, "interval_left_ms",
		    json_integer(last + interval > *now_ms ? last + interval - *now_ms : 0));
	}
	if (hint(command, "frozen")) {
		const char *a[] = { "ZSCORE", sr_key_account(zkey, cfg.prefix, carrier, "frozen"), card };

		rep = cmd(3, a);
		if (rep->type == REDIS_REPLY_STRING)
			json_object_set_new(o, "frozen_ms", json_integer(atoll(rep->str)));
		freeReplyObject(rep);
	}
	json_object_set_new(o, "command", command);
	if (history) {
		if (!(audit = audit_entries(sr_key_account(zkey, cfg.prefix, carrier, "audit"), card, 10)))
			sr_die(SR_EX_BACKEND, "%s: %s", zkey, entries_error);
		json_object_set_new(o, "audit", audit);
	}
	return o;
}

/* A card with no command, no state and no facts in the account (a typo,
 * or --carrier naming the wrong account) is not found, and said so: its
 * record would be empty, or advise to queue a request for it. */
static int
card_unknown(json_t *s, const char *card, const char *carrier)
{
	if (json_object_size(json_object_get(s, "command")) || json_object_size(json_object_get(s, "facts")))
		return 0;
	fprintf(stderr, "%s: card '%s' is not known in account '%s': no command, no state and no "
	    "facts\n", sr_prog, card, carrier);
	return 1;
}

static int
do_show(const char *card, const char *account)
{
	char *carrier = account ? sr_strdup(account) : card_carrier(card);
	long long now;

	json_t *s;

	if (!carrier) {
		fprintf(stderr, "%s: card '%s': no account known (give --carrier)\n", sr_prog, card);
		return SR_EX_REJECTED;
	}
	s = card_state(card, carrier, &now, 1);
	if (card_unknown(s, card, carrier)) {
		json_decref(s);
		free(carrier);
		return SR_EX_REJECTED;
	}
	sr_out(s);
	free(carrier);
	return SR_EX_OK;
}

/* The card's newest audit entry, if it is its command's drop by hand. */
static json_t *
last_drop(const char *card, const char *carrier)
{
	char key[SR_KEY_MAX];
	json_t *list = audit_entries(sr_key_account(key, cfg.prefix, carrier, "audit"), card, 1), *e;

	if (!list)
		sr_die(SR_EX_BACKEND, "%s: %s", key, entries_error);
	e = json_array_get(list, 0);
	if (e && sr_jstr(e, "event") && !strcmp(sr_jstr(e, "event"), "admin:drop"))
		json_incref(e);
	else
		e = NULL;
	json_decref(list);
	return e;
}

static int
do_why(const char *card, const char *account)
{
	char *carrier = account ? sr_strdup(account) : card_carrier(card), key[SR_KEY_MAX], sentence[400];
	char run[200];
	const struct sr_why_account *acc;
	json_t *dropped = NULL;
	json_t *s, *c, *o;
	long long now;
	struct sr_card_facts cf;
	struct sr_device_facts df;
	struct sr_judgment j;
	struct sr_why_card w;
	const char *state;

	if (!carrier) {
		fprintf(stderr, "%s: card '%s': no account known (give --carrier)\n", sr_prog, card);
		return SR_EX_REJECTED;
	}
	s = card_state(card, carrier, &now, 0);
	if (card_unknown(s, card, carrier)) {
		json_decref(s);
		free(carrier);
		return SR_EX_REJECTED;
	}
	o = json_object();
	c = json_object_get(s, "command");
	memset(&w, 0, sizeof w);
	w.card = card;
	w.action = sr_jstr(c, "action");
	w.superseded = hint(c, "superseded");
	w.frozen = hint(c, "frozen") != 0;
	w.frozen_who = sr_jstr(c, "frozen_who");
	w.frozen_why = sr_jstr(c, "frozen_why");
	w.frozen_at = sr_jint(s, "frozen_ms", 0);
	w.fails = hint(c, "fails");
	w.first_fail = hint(c, "first_fail");
	w.last_error = sr_jstr(c, "last_error");
	w.claim = sr_jstr(c, "claim");
	w.lease_until = hint(c, "lease_until");
	w.called = sr_jstr(c, "called") != NULL;
	w.confirming = hint(c, "confirming") != 0;
	w.due = sr_jint(s, "due_ms", 0);
	w.last_call = hint(c, "last_call");
	w.interval_ms = sr_account(&cfg, carrier)->interval_ms;
	json_object_set_new(o, "card", json_string(card));
	json_object_set_new(o, "carrier", json_string(carrier));
	json_object_set_new(o, "ver", json_integer(hint(c, "ver")));
	if (w.action)
		json_object_set_new(o, "action", json_string(w.action));
	else {
		/* No command: what the judgment says now. */
		const char *a[] = { "HGETALL", sr_key_card_facts(key, cfg.prefix, card) };
		redisReply *rep = cmd(2, a);

		sr_card_facts_load(&cf, rep);
		freeReplyObject(rep);
		memset(&df, 0, sizeof df);
		if (cf.device[0]) {
			const char *d[] = { "HGETALL", sr_key_device_facts(key, cfg.prefix, cf.device) };

			sr_device_facts_load(&df, rep = cmd(2, d));
			freeReplyObject(rep);
		}
		j = sr_judge(&cf, cf.device[0] ? &df : NULL, now / 1000);
		w.judged = &j;
		w.status = cf.status;
		json_object_set_new(o, "judged", json_string(j.reason));
		/* A card that had a command: was the last one dropped by hand?
		 * Its audit says who, when and why. */
		if (hint(c, "ver") > 0 && (dropped = last_drop(card, carrier))) {
			w.dropped_who = sr_jstr(dropped, "who");
			w.dropped_why = sr_jstr(dropped, "why");
			w.dropped_at = atoll(sr_jstr(dropped, "id"));
		}
	}
	acc = account_why_load(carrier);
	state = sr_why(&w, acc, now, sentence, sizeof sentence);
	json_object_set_new(o, "state", json_string(state));
	json_object_set_new(o, "why", sr_json_text(sentence)); /* never dropped */
	/* The command the sentence ends with, whole, for a script. */
	if (*sr_why_run(&w, acc, state, run, sizeof run))
		json_object_set_new(o, "run", json_string(run));
	json_decref(dropped);
	json_object_set_new(o, "details", s);
	sr_out(o);
	free(carrier);
	return SR_EX_OK;
}

static int
show_one(const char *what, const char *card, const char *account)
{
	return !strcmp(what, "show") ? do_show(card, account) : do_why(card, account);
}

int
admin_show(int argc, char **argv)
{
	if (carrier_opt)
		known_account(carrier_opt, 0);
	return for_cards(argc, argv, show_one, "show");
}

int
admin_why(int argc, char **argv)
{
	if (carrier_opt)
		known_account(carrier_opt, 0);
	return for_cards(argc, argv, show_one, "why");
}
