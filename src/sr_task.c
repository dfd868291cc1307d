/* sr_task.c - the task record sr-claim prints and sr-exec/sr-confirm read. */
#include <string.h>

#include "sr.h"

static int
copy_id(json_t *obj, const char *key, char *dst, size_t n, char *err, size_t errlen)
{
	const char *s = sr_jstr(obj, key);

	if (!s || !sr_valid_id(s) || strlen(s) >= n) {
		snprintf(err, errlen, "missing or bad \"%s\"", key);
		return -1;
	}
	strcpy(dst, s);
	return 0;
}

int
sr_task_parse(json_t *obj, struct sr_task *t, char *err, size_t errlen)
{
	const char *kind, *action, *token;

	memset(t, 0, sizeof *t);
	if (!json_is_object(obj)) {
		snprintf(err, errlen, "not a JSON object");
		return -1;
	}
	kind = sr_jstr(obj, "task");
	if (!kind || (strcmp(kind, "call") != 0 && strcmp(kind, "query") != 0)) {
		snprintf(err, errlen, "\"task\" must be \"call\" or \"query\"");
		return -1;
	}
	strcpy(t->kind, kind);
	if (copy_id(obj, "card", t->card, sizeof t->card, err, errlen) < 0 ||
	    copy_id(obj, "carrier", t->carrier, sizeof t->carrier, err, errlen) < 0)
		return -1;
	action = sr_jstr(obj, "action");
	if (!action || (strcmp(action, "stop") != 0 && strcmp(action, "resume") != 0)) {
		snprintf(err, errlen, "\"action\" must be \"stop\" or \"resume\"");
		return -1;
	}
	strcpy(t->action, action);
	token = sr_jstr(obj, "token");
	if (!token || !*token || strlen(token) >= sizeof t->token) {
		snprintf(err, errlen, "missing or bad \"token\"");
		return -1;
	}
	strcpy(t->token, token);
	t->ver = sr_jint(obj, "ver", -1);
	if (t->ver < 1) {
		snprintf(err, errlen, "missing or bad \"ver\"");
		return -1;
	}
	t->attempt = sr_jint(obj, "attempt", 0);
	return 0;
}
