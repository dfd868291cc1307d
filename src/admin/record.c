/* admin/record.c - what every sr-admin command uses: Redis commands that
 * end sr-admin when Redis is lost, replies as JSON records (numbers as
 * numbers), and the rule that a change says why. */
#include <stdlib.h>
#include <string.h>

#include "admin.h"

redisReply *
cmd(int argc, const char **argv)
{
	return sr_redis_must(&rds, argc, argv);
}

redisReply *
cmd_or_error(int argc, const char **argv)
{
	redisReply *rep = sr_redis_cmd(&rds, argc, argv);

	if (!rep)
		sr_die(SR_EX_BACKEND, "%s", rds.errstr);
	return rep;
}

/* Fields that are numbers, printed as JSON numbers (Redis keeps strings),
 * with the numeric facts (sr_numeric_facts); one written empty (the http of
 * a call that never went) has no value: null, never "". Ids are never in
 * this list: an ICCID has more digits than a double. */
static const char *const numeric[] = { "ver", "ver_before", "ver_after", "http", "last_http",
	"fails", "first_fail", "last_call", "lease_until", "attempt", "prio", "ms", "ms_min", "at", "due",
	"retry_after_ms", "until", "qps", "qps_from", "qps_to", "running", "burst", "value", "threshold",
	"seen_ms", "counted_ver", "accepted", "prev_call", "superseded", "frozen",
	"confirming", NULL };

static int
is_numeric(const char *name)
{
	for (const char *const *n = numeric; *n; n++)
		if (!strcmp(*n, name))
			return 1;
	for (const char *const *n = sr_numeric_facts(); *n; n++)
		if (!strcmp(*n, name))
			return 1;
	return 0;
}

json_t *
field_value(const char *name, const char *v)
{
	char *end;

	if (!*v && is_numeric(name))
		return json_null();
	if (*v && is_numeric(name)) {
		double d = strtod(v, &end);

		if (!*end)
			return d == (double)(long long)d && !strchr(v, '.') ? json_integer(atoll(v)) :
			    json_real(d);
	}
	return sr_json_text(v);
}

json_t *
hash_obj(redisReply *rep)
{
	json_t *o = json_object();

	for (size_t i = 0; rep->type == REDIS_REPLY_ARRAY && i + 1 < rep->elements; i += 2) {
		const char *k = rep->element[i]->str;

		/* "carrier" is the account's field in every record. */
		json_object_set_new(o, !strcmp(k, "account") ? "carrier" : k,
		    field_value(k, rep->element[i + 1]->str));
	}
	return o;
}

void
need_reason(const char *what)
{
	if (!reason[0])
		sr_die(SR_EX_USAGE, "%s changes state: say why with --reason TEXT (it goes in the audit, "
		    "with who)", what);
}

double
jnum(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);

	return json_is_number(v) ? json_number_value(v) : json_is_string(v) ? atof(json_string_value(v)) : 0;
}
