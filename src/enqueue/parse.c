/* enqueue/parse.c - a request into a struct req: a JSON line or a CSV row,
 * validated (its card, carrier or device, scene, source, facts and as_of),
 * with the --scene, --source and --as-of defaults applied. A request that
 * fails is rejected with why; nothing here reads Redis. */
#include <string.h>

#include "enqueue.h"

static const char *const req_keys[] = { "card", "carrier", "device", "scene", "source", "facts", "as_of",
	NULL };
static const char *const request_fields[] = { "card", "carrier", "device", "scene", "source", "as_of",
	NULL };

int
reject(struct req *r, const char *msg, const char *arg)
{
	r->st = ST_REJECTED;
	snprintf(r->error, sizeof r->error, msg, arg);
	return -1;
}

static int
check_facts(struct req *r, json_t *facts)
{
	json_t *v;

	if (!json_is_object(facts))
		return reject(r, "\"facts\" must be an object%s", "");
	if (sr_check_facts(facts, SR_FACTS_CARD, NULL, r->error, sizeof r->error) < 0) {
		r->st = ST_REJECTED;
		return -1;
	}
	if ((v = json_object_get(facts, "carrier")) && strcmp(json_string_value(v), r->carrier))
		return reject(r, "facts name carrier '%s', the request another", json_string_value(v));
	return 0;
}

/* Common fields of card and device requests. */
static int
parse_scene_source(struct req *r)
{
	const char *s;

	if (!json_object_get(r->obj, "scene") && default_scene)
		json_object_set_new(r->obj, "scene", json_string(default_scene));
	if (!json_object_get(r->obj, "source") && default_source)
		json_object_set_new(r->obj, "source", json_string(default_source));
	s = sr_jstr(r->obj, "scene");
	if ((r->prio = sr_scene_prio(s)) < 0)
		return reject(r, s ? "unknown scene \"%s\"" : "missing \"scene\"%s", s ? s : "");
	strcpy(r->scene, s);
	if (json_object_get(r->obj, "source")) {
		s = sr_jstr(r->obj, "source");
		if (!s || strlen(s) >= sizeof r->source)
			return reject(r, "\"source\" must be a string of at most 128 bytes%s", "");
		strcpy(r->source, s);
	}
	/* When its facts were true: how far ahead of Redis's clock it is is
	 * checked once that clock is read (read_facts). */
	r->as_of = default_as_of;
	if (json_object_get(r->obj, "as_of") &&
	    (r->as_of = sr_json_as_of(json_object_get(r->obj, "as_of"), r->error, sizeof r->error)) < 0) {
		r->st = ST_REJECTED;
		return -1;
	}
	return 0;
}

/* A device request: evaluate every card of the device (dev-eval). */
static void
parse_device(struct req *r)
{
	const char *s = sr_jstr(r->obj, "device");

	r->is_device = 1;
	if (!sr_valid_id(s)) {
		reject(r, "\"device\" must be an id [A-Za-z0-9_.-]{1,64}%s", "");
		return;
	}
	strcpy(r->device, s);
	if (json_object_get(r->obj, "carrier")) {
		reject(r, "a device request has no \"carrier\" (its cards have theirs)%s", "");
		return;
	}
	if (parse_scene_source(r) < 0)
		return;
	if ((r->facts = json_object_get(r->obj, "facts"))) {
		if (!json_is_object(r->facts)) {
			reject(r, "\"facts\" must be an object%s", "");
			return;
		}
		if (sr_check_facts(r->facts, SR_FACTS_DEVICE, NULL, r->error, sizeof r->error) < 0) {
			r->st = ST_REJECTED;
			return;
		}
	}
	r->st = ST_PENDING;
}

/* Validate a request object (r->obj); fills r or marks it rejected. */
static void
parse_obj(struct req *r)
{
	const char *s, *bad;

	if (!json_is_object(r->obj)) {
		reject(r, "a request must be a JSON object%s", "");
		return;
	}
	if ((s = sr_jstr(r->obj, "card")) && strlen(s) < sizeof r->card)
		strcpy(r->card, s);
	if ((s = sr_jstr(r->obj, "carrier")) && strlen(s) < sizeof r->carrier)
		strcpy(r->carrier, s);
	if ((bad = sr_unknown_key(r->obj, req_keys))) {
		reject(r, "unknown field \"%s\"", bad);
		return;
	}
	if (json_object_get(r->obj, "device") && !json_object_get(r->obj, "card")) {
		parse_device(r);
		return;
	}
	if (json_object_get(r->obj, "device")) {
		reject(r, "a card request names its device in \"facts\"%s", "");
		return;
	}
	s = sr_jstr(r->obj, "card");
	if (!sr_valid_id(s)) {
		reject(r, "\"card\" must be an id [A-Za-z0-9_.-]{1,64}%s", "");
		return;
	}
	s = sr_jstr(r->obj, "carrier");
	if (!sr_valid_id(s)) {
		reject(r, "\"carrier\" must be an id [A-Za-z0-9_.-]{1,64}%s", "");
		return;
	}
	if (parse_scene_source(r) < 0)
		return;
	if ((r->facts = json_object_get(r->obj, "facts")) && check_facts(r, r->facts) < 0)
		return;
	if (r->facts && json_object_size(r->facts) == 0)
		r->facts = NULL; /* "facts":{} says nothing: a card nobody knows is rejected */
	r->st = ST_PENDING;
}

void
parse_line(struct req *r, const char *line)
{
	char err[200];

	if (!(r->obj = sr_json_line(line, err, sizeof err))) {
		reject(r, "%s", err);
		return;
	}
	parse_obj(r);
}

/* A CSV row: the request's own columns stay, every other column is a fact. */
void
parse_csv_row(struct req *r, json_t *row)
{
	json_t *facts = json_object(), *v;
	const char *key;
	void *tmp;

	r->obj = row;
	json_object_foreach_safe(row, tmp, key, v) {
		int own = 0;

		for (const char *const *f = request_fields; *f; f++)
			own |= !strcmp(*f, key);
		if (!strcmp(key, "device") && json_object_get(row, "card"))
			own = 0; /* a card row's device column is the card's fact */
		if (!own) {
			json_object_set(facts, key, v);
			json_object_del(row, key);
		}
	}
	if (sr_json_flags(facts, sr_flag_facts(), r->error, sizeof r->error) < 0 ||
	    sr_json_integers(facts, sr_numeric_facts(), r->error, sizeof r->error) < 0) {
		json_decref(facts);
		if ((key = sr_jstr(row, "card")) && strlen(key) < sizeof r->card)
			strcpy(r->card, key);
		r->st = ST_REJECTED;
		return;
	}
	if (json_object_size(facts) > 0)
		json_object_set_new(row, "facts", facts);
	else
		json_decref(facts);
	parse_obj(r);
}
