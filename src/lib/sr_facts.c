/* sr_facts.c - the facts srq judges by, in one table: each fact's name (in
 * JSON and CSV), its field in the Redis facts hash (two letters: a card's
 * facts hash is kept for every card of the platform, and long field names
 * were a quarter of it), whether a card or a device carries it, the shape
 * of its value, and where the judgment keeps it. Validation
 * (sr_check_facts), loading from Redis (sr_card_facts_load,
 * sr_device_facts_load), a request's facts laid over the stored ones
 * (sr_card_facts_merge), the list of numeric facts (CSV cells) and the
 * tools' usage lines (sr_facts_list) are all read from it: a new fact is one
 * row here and, if the judgment reads it, one field of its struct (sr_facts.h).
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "sr.h"

enum fact_type { F_ID, F_STATUS, F_STOPPED_BY, F_INT, F_FLAG };
#define ON_CARD (1u << SR_FACTS_CARD)
#define ON_DEVICE (1u << SR_FACTS_DEVICE)
#define NOT_KEPT ((size_t)-1), 0
#define CARD(m) offsetof(struct sr_card_facts, m), sizeof(((struct sr_card_facts *)0)->m)
#define DEVICE(m) offsetof(struct sr_device_facts, m), sizeof(((struct sr_device_facts *)0)->m)

static const struct fact {
	const char *name;
	const char *field;     /* in the facts hash (docs/redis.md "Redis layout") */
	unsigned on;           /* ON_CARD, ON_DEVICE */
	enum fact_type type;
	size_t card_off, card_size; /* where struct sr_card_facts keeps it */
	size_t dev_off, dev_size;   /* where struct sr_device_facts keeps it */
} facts[] = {
	{ "carrier", "cr", ON_CARD, F_ID, CARD(carrier), NOT_KEPT },
	{ "device", "dv", ON_CARD, F_ID, CARD(device), NOT_KEPT },
	{ "status", "st", ON_CARD, F_STATUS, CARD(status), NOT_KEPT },
	{ "stopped_by", "sb", ON_CARD, F_STOPPED_BY, CARD(stopped_by), NOT_KEPT },
	{ "pkg_expires_at", "pe", ON_CARD | ON_DEVICE, F_INT, CARD(pkg_expires_at), DEVICE(pkg_expires_at) },
	{ "data_used_kb", "du", ON_CARD, F_INT, CARD(data_used_kb), NOT_KEPT },
	{ "data_quota_kb", "dq", ON_CARD, F_INT, CARD(data_quota_kb), NOT_KEPT },
	{ "refunded", "rf", ON_CARD, F_FLAG, CARD(refunded), NOT_KEPT },
	{ "polling_paused", "pp", ON_CARD, F_FLAG, NOT_KEPT, NOT_KEPT },
	{ "disabled", "ds", ON_DEVICE, F_FLAG, NOT_KEPT, DEVICE(disabled) },
};
#define NFACTS (sizeof facts / sizeof facts[0])
_Static_assert(NFACTS <= SR_FACTS_MAX, "struct sr_card_facts keeps a time per row");

/* Beside the facts in their hash (facts_write.lua): each write that holds
 * the newest value of some facts, '@' + ms + ':' + source, its value those
 * facts' fields, "pe,du". */
#define WRITE_MARK '@'

static const struct fact *
find(const char *name, unsigned on)
{
	for (size_t i = 0; i < NFACTS; i++)
		if ((facts[i].on & on) && !strcmp(facts[i].name, name))
			return &facts[i];
	return NULL;
}

/* Keep a value in a facts struct at off: a string (str, len bytes) or a
 * number (num), as the fact's type says. */
static void
keep(const struct fact *f, void *base, size_t off, size_t size, const char *str, size_t len,
    long long num)
{
	char *p = (char *)base + off;

	switch (f->type) {
	case F_ID:
	case F_STATUS:
	case F_STOPPED_BY:
		if (len > size - 1)
			len = size - 1;
		memcpy(p, str ? str : "", str ? len : 0);
		p[str ? len : 0] = '\0';
		break;
	case F_INT:
		memcpy(p, &num, sizeof num);
		break;
	case F_FLAG: {
		int flag = num != 0;

		memcpy(p, &flag, sizeof flag);
		break;
	}
	}
}

/* The fact stored under field: its short field, or (legacy) its name, as
 * releases before the short fields wrote it and `sr-admin migrate`
 * renames. *legacy tells which. */
static const struct fact *
find_field(const char *field, unsigned on, int *legacy)
{
	for (size_t i = 0; i < NFACTS; i++)
		if (facts[i].on & on) {
			if (!strcmp(facts[i].field, field)) {
				*legacy = 0;
				return &facts[i];
			}
			if (!strcmp(facts[i].name, field)) {
				*legacy = 1;
				return &facts[i];
			}
		}
	return NULL;
}

/* fn(fact, arg) for each fact of kind on in a list of fields ("pe,du"). */
static void
each_field(const char *list, unsigned on, void (*fn)(const struct fact *, void *), void *arg)
{
	for (const char *p = list; *p;) {
		size_t n = strcspn(p, ",");
		char name[8];
		const struct fact *f;
		int legacy;

		if (n < sizeof name) {
			memcpy(name, p, n);
			name[n] = '\0';
			if ((f = find_field(name, on, &legacy)) && !legacy)
				fn(f, arg);
		}
		p += n + (p[n] == ',');
	}
}

/* A write's field ('@' + ms + ':' + source) and value (its facts' fields,
 * "pe,du"): fn(fact, ms, source, arg) for each fact of kind on it holds. */
struct written {
	void (*fn)(const struct fact *, long long, const char *, void *);
	long long ms;
	const char *source;
	void *arg;
};

static void
written_one(const struct fact *f, void *w)
{
	const struct written *x = w;

	x->fn(f, x->ms, x->source, x->arg);
}

static void
each_written(const char *field, const char *value, unsigned on,
    void (*fn)(const struct fact *, long long, const char *, void *), void *arg)
{
	const char *colon = strchr(field, ':');
	struct written w = { fn, atoll(field + 1), colon ? colon + 1 : "", arg };

	each_field(value, on, written_one, &w);
}

static void
name_one(const struct fact *f, void *array)
{
	json_array_append_new(array, json_string(f->name));
}

json_t *
sr_facts_named(const char *list, enum sr_fact_kind kind)
{
	json_t *a = json_array();

	each_field(list, 1u << kind, name_one, a);
	if (json_array_size(a) == 0) {
		json_decref(a);
		return NULL;
	}
	return a;
}

static void
keep_time(const struct fact *f, long long ms, const char *source, void *as_of)
{
	(void)source;
	((long long *)as_of)[f - facts] = ms;
}

/* The fields of a facts hash (HGETALL's reply) into a struct, and each
 * fact's time into as_of (by row; NULL: not kept). A legacy field is read
 * first, so that the short one, written since, wins. */
static void
load(void *base, unsigned on, const redisReply *h, long long *as_of)
{
	for (int pass = 1; pass >= 0; pass--)
		for (size_t i = 0; i + 1 < h->elements; i += 2) {
			const char *k = h->element[i]->str;
			const redisReply *v = h->element[i + 1];
			const struct fact *f;
			int legacy;

			if (k && k[0] == WRITE_MARK && v->type == REDIS_REPLY_STRING && as_of && pass == 0)
				each_written(k, v->str, on, keep_time, as_of);
			if (!k || v->type != REDIS_REPLY_STRING || !(f = find_field(k, on, &legacy)) ||
			    legacy != pass)
				continue;
			if (on == ON_CARD && f->card_off != (size_t)-1)
				keep(f, base, f->card_off, f->card_size, v->str, v->len, atoll(v->str));
			else if (on == ON_DEVICE && f->dev_off != (size_t)-1)
				keep(f, base, f->dev_off, f->dev_size, v->str, v->len, atoll(v->str));
		}
}

int
sr_facts_renames(const char **argv, int max)
{
	int n = 0;

	for (size_t i = 0; i < NFACTS && n + 2 <= max; i++) {
		argv[n++] = facts[i].name;
		argv[n++] = facts[i].field;
	}
	return n;
}

const char *
sr_fact_field(const char *name)
{
	for (size_t i = 0; i < NFACTS; i++)
		if (!strcmp(facts[i].name, name))
			return facts[i].field;
	return NULL;
}

const char *
sr_fact_name(const char *field, enum sr_fact_kind kind)
{
	int legacy;
	const struct fact *f = find_field(field, 1u << kind, &legacy);

	return f ? f->name : field;
}

json_t *
sr_facts_json(const redisReply *h, enum sr_fact_kind kind)
{
	json_t *o = json_object();

	if (!h || h->type != REDIS_REPLY_ARRAY)
		return o;
	for (int pass = 1; pass >= 0; pass--)
		for (size_t i = 0; i + 1 < h->elements; i += 2) {
			const char *k = h->element[i]->str;
			const redisReply *v = h->element[i + 1];
			const struct fact *f = k ? find_field(k, 1u << kind, &(int){ 0 }) : NULL;
			int legacy = f && strcmp(f->field, k);

			if (!k || v->type != REDIS_REPLY_STRING || legacy != pass || k[0] == WRITE_MARK)
				continue;
			if (!f) /* not a fact srq knows: shown as stored */
				json_object_set_new(o, k, json_string(v->str));
			else if (f->type == F_INT || f->type == F_FLAG)
				json_object_set_new(o, f->name, json_integer(atoll(v->str)));
			else
				json_object_set_new(o, f->name, json_string(v->str));
		}
	return o;
}

static void
show_time(const struct fact *f, long long ms, const char *source, void *obj)
{
	json_t *t = json_object_get(obj, f->name);

	if (!t) /* deleted as of then (a stopped_by cleared by a resume) */
		json_object_set_new(obj, f->name, t = json_object());
	json_object_set_new(t, "as_of_ms", json_integer(ms));
	json_object_set_new(t, "source", json_string(source));
}

json_t *
sr_facts_times_json(const redisReply *h, enum sr_fact_kind kind)
{
	json_t *o = json_object();

	if (!h || h->type != REDIS_REPLY_ARRAY)
		return o;
	/* Every fact stored, with no time nor writer until its write says. (A
	 * card's carrier is who it is, not a fact with a time.) */
	for (size_t i = 0; i + 1 < h->elements; i += 2) {
		const char *k = h->element[i]->str;
		const struct fact *f;
		int legacy;
		json_t *t;

		if (!k || h->element[i + 1]->type != REDIS_REPLY_STRING ||
		    !(f = find_field(k, 1u << kind, &legacy)) || !strcmp(f->name, "carrier") ||
		    json_object_get(o, f->name))
			continue;
		t = json_object();
		json_object_set_new(t, "as_of_ms", json_null());
		json_object_set_new(t, "source", json_null());
		json_object_set_new(o, f->name, t);
	}
	for (size_t i = 0; i + 1 < h->elements; i += 2) {
		const char *k = h->element[i]->str;

		if (k && k[0] == WRITE_MARK && h->element[i + 1]->type == REDIS_REPLY_STRING)
			each_written(k, h->element[i + 1]->str, 1u << kind, show_time, o);
	}
	return o;
}

int
sr_card_facts_load(struct sr_card_facts *f, const redisReply *h)
{
	memset(f, 0, sizeof *f);
	if (!h || h->type != REDIS_REPLY_ARRAY)
		return h && h->type == REDIS_REPLY_ERROR ? -1 : 0;
	f->known = h->elements > 0;
	load(f, ON_CARD, h, f->as_of);
	return 0;
}

int
sr_device_facts_load(struct sr_device_facts *f, const redisReply *h)
{
	memset(f, 0, sizeof *f);
	if (!h || h->type != REDIS_REPLY_ARRAY)
		return h && h->type == REDIS_REPLY_ERROR ? -1 : 0;
	load(f, ON_DEVICE, h, NULL);
	/* 0 means no device-level package, like an absent field. */
	f->has_pkg = f->pkg_expires_at > 0;
	return 0;
}

long long
sr_fact_as_of(const struct sr_card_facts *cf, const char *name)
{
	const struct fact *f = find(name, ON_CARD);

	return f ? cf->as_of[f - facts] : 0;
}

int
sr_fact_older(const struct sr_card_facts *cf, const char *name, long long as_of)
{
	return as_of && as_of < sr_fact_as_of(cf, name);
}

void
sr_card_facts_merge(struct sr_card_facts *cf, json_t *obj, long long as_of)
{
	const char *key;
	json_t *v;

	json_object_foreach(obj, key, v) {
		const struct fact *f = find(key, ON_CARD);
		const char *s = json_string_value(v);

		/* The request's own carrier is the card's, not a fact's; a fact
		 * stored as of a later time stays (facts_write.lua). */
		if (!f || f->card_off == (size_t)-1 || !strcmp(key, "carrier") || sr_fact_older(cf, key, as_of))
			continue;
		keep(f, cf, f->card_off, f->card_size, s, s ? strlen(s) : 0,
		    json_is_boolean(v) ? json_is_true(v) : json_integer_value(v));
	}
}

int
sr_check_facts(json_t *obj, enum sr_fact_kind kind, const char *const *skip, char *err,
    size_t errlen)
{
	const char *key;
	json_t *v;

	json_object_foreach(obj, key, v) {
		const struct fact *f;
		const char *s = json_string_value(v);
		int skipped = 0;

		for (const char *const *k = skip; k && *k; k++)
			skipped |= !strcmp(*k, key);
		if (skipped)
			continue;
		if (!(f = find(key, 1u << kind))) {
			snprintf(err, errlen, "unknown %s fact \"%s\"",
			    kind == SR_FACTS_CARD ? "card" : "device", key);
			return -1;
		}
		switch (f->type) {
		case F_ID:
			if (!sr_valid_id(s)) {
				snprintf(err, errlen, "fact \"%s\" must be an id [A-Za-z0-9_.-]{1,64}", key);
				return -1;
			}
			break;
		case F_STATUS:
			if (!s || (strcmp(s, "active") && strcmp(s, "stopped"))) {
				snprintf(err, errlen, "fact \"status\" must be \"active\" or \"stopped\"");
				return -1;
			}
			break;
		case F_STOPPED_BY:
			if (!s || (strcmp(s, "auto") && strcmp(s, "manual"))) {
				snprintf(err, errlen, "fact \"stopped_by\" must be \"auto\" or \"manual\"");
				return -1;
			}
			break;
		case F_FLAG:
			if (json_is_boolean(v) ||
			    (json_is_integer(v) && (json_integer_value(v) == 0 || json_integer_value(v) == 1)))
				break;
			snprintf(err, errlen, "fact \"%s\" must be 0, 1, true or false", key);
			return -1;
		case F_INT:
			if (!json_is_integer(v) || json_integer_value(v) < 0) {
				snprintf(err, errlen, "fact \"%s\" must be a non-negative integer", key);
				return -1;
			}
			break;
		}
	}
	return 0;
}

const char *const *
sr_numeric_facts(void)
{
	static const char *names[NFACTS + 1];

	if (!names[0])
		for (size_t i = 0, n = 0; i < NFACTS; i++)
			if (facts[i].type == F_INT || facts[i].type == F_FLAG)
				names[n++] = facts[i].name;
	return names;
}

const char *const *
sr_flag_facts(void)
{
	static const char *names[NFACTS + 1];

	if (!names[0])
		for (size_t i = 0, n = 0; i < NFACTS; i++)
			if (facts[i].type == F_FLAG)
				names[n++] = facts[i].name;
	return names;
}

void
sr_fact_value(json_t *v, char *buf, size_t n)
{
	if (json_is_string(v))
		snprintf(buf, n, "%s", json_string_value(v));
	else if (json_is_boolean(v))
		snprintf(buf, n, "%d", json_is_true(v) ? 1 : 0);
	else
		snprintf(buf, n, "%lld", (long long)json_integer_value(v));
}

const char *
sr_facts_list(enum sr_fact_kind kind, const char *skip, int col, const char *indent)
{
	static char buf[2][512];
	static int turn;
	char *out = buf[turn ^= 1];
	size_t len = 0;

	out[0] = '\0';
	for (size_t i = 0; i < NFACTS; i++)
		if ((facts[i].on & (1u << kind)) && !(skip && !strcmp(skip, facts[i].name)))
			len = sr_wrap_word(out, sizeof buf[0], len, &col, facts[i].name, indent);
	return out;
}
