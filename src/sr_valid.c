/* sr_valid.c - input validation shared by every tool that reads requests. */
#include <string.h>

#include "sr.h"

int
sr_valid_id(const char *s)
{
	size_t n = 0;

	if (!s)
		return 0;
	for (; s[n]; n++) {
		char c = s[n];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
			c == '_' || c == '.' || c == '-'))
			return 0;
		if (n >= 64)
			return 0;
	}
	return n >= 1;
}

static const struct {
	const char *scene;
	enum sr_prio prio;
} scenes[] = {
	/* A paying user is waiting: served before normal work. */
	{ "order", SR_PRIO_HIGH },
	{ "activation", SR_PRIO_HIGH },
	{ "package_expired", SR_PRIO_NORMAL },
	{ "data_exhausted", SR_PRIO_NORMAL },
	{ "refund", SR_PRIO_NORMAL },
	{ "polling", SR_PRIO_NORMAL },
	{ "device", SR_PRIO_NORMAL },
	{ "device_package_expired", SR_PRIO_NORMAL },
	{ "manual_recheck", SR_PRIO_NORMAL },
	/* The monthly data reset moves many cards at once: last, never starved. */
	{ "reset", SR_PRIO_BULK },
};

int
sr_scene_prio(const char *scene)
{
	if (!scene)
		return -1;
	for (size_t i = 0; i < sizeof scenes / sizeof scenes[0]; i++)
		if (strcmp(scene, scenes[i].scene) == 0)
			return (int)scenes[i].prio;
	return -1;
}

const char *
sr_unknown_key(json_t *obj, const char *const *allowed)
{
	const char *key;
	json_t *val;

	json_object_foreach(obj, key, val) {
		const char *const *a;

		(void)val;
		for (a = allowed; *a; a++)
			if (strcmp(*a, key) == 0)
				break;
		if (!*a)
			return key;
	}
	return NULL;
}

/* The facts the judgment reads, which records may carry them, and how
 * their values must look. */
enum { F_ID, F_STATUS, F_STOPPED_BY, F_INT, F_FLAG };
static const struct {
	const char *name;
	int card, device; /* allowed on a card / a device */
	int type;
} facts[] = {
	{ "carrier", 1, 0, F_ID },
	{ "device", 1, 0, F_ID },
	{ "status", 1, 0, F_STATUS },
	{ "stopped_by", 1, 0, F_STOPPED_BY },
	{ "pkg_expires_at", 1, 1, F_INT },
	{ "data_used_kb", 1, 0, F_INT },
	{ "data_quota_kb", 1, 0, F_INT },
	{ "refunded", 1, 0, F_FLAG },
	{ "polling_paused", 1, 0, F_FLAG },
	{ "disabled", 0, 1, F_FLAG },
};

const char *const sr_numeric_facts[] = { "pkg_expires_at", "data_used_kb", "data_quota_kb",
	"refunded", "polling_paused", "disabled", NULL };

int
sr_check_facts(json_t *obj, enum sr_fact_kind kind, const char *const *skip, char *err,
    size_t errlen)
{
	const char *key;
	json_t *v;

	json_object_foreach(obj, key, v) {
		size_t i;
		const char *s = json_string_value(v);
		int skipped = 0;

		for (const char *const *k = skip; k && *k; k++)
			skipped |= !strcmp(*k, key);
		if (skipped)
			continue;
		for (i = 0; i < sizeof facts / sizeof facts[0]; i++)
			if (!strcmp(facts[i].name, key) &&
			    (kind == SR_FACTS_CARD ? facts[i].card : facts[i].device))
				break;
		if (i == sizeof facts / sizeof facts[0]) {
			snprintf(err, errlen, "unknown %s fact \"%s\"",
			    kind == SR_FACTS_CARD ? "card" : "device", key);
			return -1;
		}
		switch (facts[i].type) {
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
