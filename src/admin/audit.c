/* admin/audit.c - the audit streams: a card's or an account's entries,
 * oldest first (sr-admin audit; show's last entries, why's last drop). */
#include <stdlib.h>
#include <string.h>

#include "admin.h"

/* Page by page (however many entries of other cards are newer), at most
 * AUDIT_SCAN entries back: a card with a short history does not read a
 * long stream to its start each time. */
#define AUDIT_SCAN 200000
char entries_error[256]; /* why audit_entries returned NULL */
json_t *
audit_entries(const char *stream, const char *card, long limit)
{
	char count[24], end[48], start[32];
	const char *argv[] = { "XREVRANGE", stream, end, start, "COUNT", count };
	json_t *list = json_array();
	long page = card ? 5000 : limit, scanned = 0;

	snprintf(count, sizeof count, "%ld", page);
	snprintf(start, sizeof start, "%lld", since);
	snprintf(end, sizeof end, "+");
	for (;;) {
		redisReply *rep = cmd_or_error(6, argv);
		size_t n = rep->type == REDIS_REPLY_ARRAY ? rep->elements : 0;

		if (rep->type == REDIS_REPLY_ERROR) {
			/* (a stream damaged by hand) the caller says whose */
			snprintf(entries_error, sizeof entries_error, "%s", rep->str);
			freeReplyObject(rep);
			json_decref(list);
			return NULL;
		}

		for (size_t i = 0; i < n && (long)json_array_size(list) < limit; i++) {
			redisReply *e = rep->element[i];
			json_t *o = hash_obj(e->element[1]);

			if (card && strcmp(sr_jstr(o, "card") ? sr_jstr(o, "card") : "", card)) {
				json_decref(o);
				continue;
			}
			json_object_set_new(o, "id", json_string(e->element[0]->str));
			json_array_insert_new(list, 0, o);
		}
		/* The next page: before the oldest entry of this one. */
		if (n > 0)
			snprintf(end, sizeof end, "(%s", rep->element[n - 1]->element[0]->str);
		freeReplyObject(rep);
		scanned += (long)n;
		if (!card || (long)n < page || (long)json_array_size(list) >= limit)
			return list;
		if (scanned >= AUDIT_SCAN) {
			sr_warn("audit of '%s': only the newest %d entries of the account were searched; "
			    "narrow with --since", card, AUDIT_SCAN);
			return list;
		}
	}
}

void
said_cut(json_t *list, const char *what, const char *account)
{
	if (json_array_size(list) >= LIST_MAX)
		sr_warn("only the newest %d %s of account '%s' are printed; narrow with --since", LIST_MAX,
		    what, account);
}

static int
do_audit(const char *card, const char *account)
{
	char *carrier;
	char key[SR_KEY_MAX];
	json_t *list, *e;
	size_t i;

	if (account)
		known_account(account, 0);
	carrier = account ? sr_strdup(account) : card_carrier(card);
	if (!carrier) {
		fprintf(stderr, "%s: card '%s': no account known (give --carrier)\n", sr_prog, card);
		return SR_EX_REJECTED;
	}
	if (!(list = audit_entries(sr_key_account(key, cfg.prefix, carrier, "audit"), card, LIST_MAX)))
		sr_die(SR_EX_BACKEND, "%s: %s", key, entries_error);
	if (!card)
		said_cut(list, "entries", carrier);
	/* Every record names its account: the stream's entries do not (the
	 * stream is the account's), a line piped on must. */
	json_array_foreach(list, i, e) {
		json_object_set_new(e, "carrier", json_string(carrier));
		sr_out(json_incref(e));
	}
	json_decref(list);
	free(carrier);
	return SR_EX_OK;
}

int
admin_audit(int argc, char **argv)
{
	if (argc == 1 && !sr_valid_id(argv[0]))
		command_usage();
	/* With --account, a card given still narrows it to that card's. */
	return do_audit(argc == 1 ? argv[0] : NULL, account_opt);
}
