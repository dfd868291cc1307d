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

/* Every scene and its class, one row each: requests are checked against
 * it, and the tools' usage lists it (sr_scene_list). */
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
#define NSCENES (sizeof scenes / sizeof scenes[0])

int
sr_scene_prio(const char *scene)
{
	if (!scene)
		return -1;
	for (size_t i = 0; i < NSCENES; i++)
		if (strcmp(scene, scenes[i].scene) == 0)
			return (int)scenes[i].prio;
	return -1;
}

const char *
sr_scene_list(int col, const char *indent)
{
	static char out[512];
	size_t len = 0;

	out[0] = '\0';
	for (size_t i = 0; i < NSCENES; i++)
		len = sr_wrap_word(out, sizeof out, len, &col, scenes[i].scene, indent);
	return out;
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
