/* test_facts.c - the facts table: what a card and a device may carry, their
 * values checked, loaded from a Redis hash, laid over from a request, listed
 * for the usage texts. */
#include <string.h>

#include "sr.h"
#include "unit.h"

/* An HGETALL reply from "field", "value", ... pairs (NULL-terminated). */
static redisReply *
hash(const char **fv)
{
	static redisReply r, *el[32], items[32];
	size_t n = 0;

	for (; fv[n]; n++) {
		memset(&items[n], 0, sizeof items[n]);
		items[n].type = REDIS_REPLY_STRING;
		items[n].str = (char *)fv[n];
		items[n].len = strlen(fv[n]);
		el[n] = &items[n];
	}
	memset(&r, 0, sizeof r);
	r.type = REDIS_REPLY_ARRAY;
	r.elements = n;
	r.element = el;
	return &r;
}

static int
check(const char *json, enum sr_fact_kind kind)
{
	char err[160];
	json_t *o = json_loads(json, 0, NULL);
	int rc = sr_check_facts(o, kind, NULL, err, sizeof err);

	json_decref(o);
	return rc;
}

static int
listed(const char *const *names, const char *name)
{
	for (; *names; names++)
		if (!strcmp(*names, name))
			return 1;
	return 0;
}

int
main(void)
{
	struct sr_card_facts cf;
	struct sr_device_facts df;
	const char *card[] = { "cr", "c17", "dv", "D42", "st", "stopped", "sb", "manual", "pe",
		"1798675200", "du", "900", "dq", "1000", "rf", "1", "pp", "1", "colour", "red", NULL };
	const char *dev[] = { "pe", "0", "ds", "1", NULL };
	/* As releases before the short fields wrote them, a later short one
	 * beside (written since): it wins, whatever the order of the reply. */
	const char *legacy[] = { "st", "active", "status", "stopped", "stopped_by", "manual",
		"pkg_expires_at", "7", NULL };
	json_t *shown;
	json_t *req;

	sr_card_facts_load(&cf, hash(card));
	CHECK(cf.known && !strcmp(cf.carrier, "c17") && !strcmp(cf.device, "D42"), "ids loaded");
	CHECK(!strcmp(cf.status, "stopped") && !strcmp(cf.stopped_by, "manual"), "strings loaded");
	CHECK(cf.pkg_expires_at == 1798675200 && cf.data_used_kb == 900 && cf.data_quota_kb == 1000,
	    "numbers loaded");
	CHECK(cf.refunded == 1, "a flag loaded");
	sr_card_facts_load(&cf, hash((const char *[]){ NULL }));
	CHECK(!cf.known && !cf.status[0] && cf.pkg_expires_at == 0, "no facts: unknown, zeros");
	sr_device_facts_load(&df, hash(dev));
	CHECK(!df.has_pkg && df.disabled, "a device package of 0 is none; disabled loaded");
	sr_device_facts_load(&df, hash((const char *[]){ "pe", "5", NULL }));
	CHECK(df.has_pkg && df.pkg_expires_at == 5 && !df.disabled, "a device package");

	sr_card_facts_load(&cf, hash(legacy));
	CHECK(!strcmp(cf.status, "active") && !strcmp(cf.stopped_by, "manual") && cf.pkg_expires_at == 7,
	    "legacy fields read; a short field wins over its legacy one");
	shown = sr_facts_json(hash(legacy), SR_FACTS_CARD);
	CHECK(!strcmp(json_string_value(json_object_get(shown, "status")), "active") &&
	    json_integer_value(json_object_get(shown, "pkg_expires_at")) == 7 &&
	    json_object_size(shown) == 3, "shown under the facts' names, the short field winning");
	json_decref(shown);
	shown = sr_facts_json(hash(card), SR_FACTS_CARD);
	CHECK(!strcmp(json_string_value(json_object_get(shown, "stopped_by")), "manual") &&
	    json_integer_value(json_object_get(shown, "data_used_kb")) == 900 &&
	    !strcmp(json_string_value(json_object_get(shown, "colour")), "red"),
	    "a stored field that is no fact is shown as stored");
	json_decref(shown);
	CHECK(!strcmp(sr_fact_field("pkg_expires_at"), "pe") && !sr_fact_field("colour"),
	    "each fact's field");

	sr_card_facts_load(&cf, hash(card));
	req = json_pack("{ss si sb ss}", "status", "active", "data_used_kb", 1000, "refunded", 0,
	    "carrier", "c99");
	sr_card_facts_merge(&cf, req, 0);
	CHECK(!strcmp(cf.status, "active") && cf.data_used_kb == 1000 && cf.refunded == 0,
	    "a request's facts laid over the stored ones");
	CHECK(!strcmp(cf.carrier, "c17") && !strcmp(cf.device, "D42"), "carrier kept, the rest too");
	json_decref(req);

	/* Each fact as of its time: an older one is left out, per fact. */
	sr_card_facts_load(&cf, hash((const char *[]){ "pe", "100", "du", "5", "dq", "10",
		"@1700000000500:order-svc", "pe", "@1700000000100:sr-asset", "du,xx,sb", NULL }));
	CHECK(cf.as_of[4] == 1700000000500 && cf.as_of[5] == 1700000000100 && cf.as_of[6] == 0 &&
	    cf.pkg_expires_at == 100, "times loaded by write, none for a fact no write holds");
	req = json_pack("{si si si}", "pkg_expires_at", 200, "data_used_kb", 9, "data_quota_kb", 20);
	sr_card_facts_merge(&cf, req, 1700000000300);
	CHECK(cf.pkg_expires_at == 100 && cf.data_used_kb == 9 && cf.data_quota_kb == 20,
	    "older than the stored fact: left out; newer, or stored without a time: laid over");
	CHECK(sr_fact_older(&cf, "pkg_expires_at", 1700000000499) &&
	    !sr_fact_older(&cf, "pkg_expires_at", 1700000000500) && !sr_fact_older(&cf, "pkg_expires_at", 0),
	    "equal times are not older; 0 is now");
	sr_card_facts_merge(&cf, req, 0);
	CHECK(cf.pkg_expires_at == 200, "a write as of now is never older");
	json_decref(req);
	shown = sr_facts_times_json(hash((const char *[]){ "pe", "100", "du", "5", "cr", "c17",
		"@1700000000500:cron:expiry", "pe,sb", "dq", "7", NULL }), SR_FACTS_CARD);
	CHECK(json_integer_value(json_object_get(json_object_get(shown, "pkg_expires_at"), "as_of_ms")) ==
	    1700000000500 && !strcmp(json_string_value(json_object_get(json_object_get(shown,
	    "pkg_expires_at"), "source")), "cron:expiry"), "a fact's time and writer, its write's");
	CHECK(json_is_null(json_object_get(json_object_get(shown, "data_used_kb"), "as_of_ms")) &&
	    json_is_null(json_object_get(json_object_get(shown, "data_used_kb"), "source")) &&
	    !json_object_get(shown, "carrier") && json_object_size(shown) == 4,
	    "no write holds it: null; the carrier is no timed fact; a fact deleted as of then shown");
	json_decref(shown);
	shown = sr_facts_json(hash((const char *[]){ "pe", "100", "@1:x", "pe", NULL }), SR_FACTS_CARD);
	CHECK(json_object_size(shown) == 1, "writes are not facts");
	json_decref(shown);

	CHECK(check("{\"status\":\"active\",\"pkg_expires_at\":1,\"refunded\":true}", SR_FACTS_CARD) == 0,
	    "good card facts");
	CHECK(check("{\"disabled\":1,\"pkg_expires_at\":0}", SR_FACTS_DEVICE) == 0, "good device facts");
	CHECK(check("{\"disabled\":1}", SR_FACTS_CARD) < 0, "disabled is a device's");
	CHECK(check("{\"status\":\"active\"}", SR_FACTS_DEVICE) < 0, "status is a card's");
	CHECK(check("{\"status\":\"asleep\"}", SR_FACTS_CARD) < 0, "status active or stopped");
	CHECK(check("{\"stopped_by\":\"cron\"}", SR_FACTS_CARD) < 0, "stopped_by auto or manual");
	CHECK(check("{\"refunded\":2}", SR_FACTS_CARD) < 0, "a flag is 0 or 1");
	CHECK(check("{\"pkg_expires_at\":-1}", SR_FACTS_CARD) < 0, "no negative numbers");
	CHECK(check("{\"device\":\"a b\"}", SR_FACTS_CARD) < 0, "a device is an id");
	CHECK(check("{\"colour\":\"red\"}", SR_FACTS_CARD) < 0, "unknown facts refused");

	CHECK(listed(sr_numeric_facts(), "pkg_expires_at") && listed(sr_numeric_facts(), "disabled") &&
	    listed(sr_numeric_facts(), "polling_paused"), "numeric facts listed");
	CHECK(!listed(sr_numeric_facts(), "status") && !listed(sr_numeric_facts(), "device"),
	    "string facts not numeric");
	CHECK(!strcmp(sr_facts_list(SR_FACTS_DEVICE, NULL, 0, ""), "pkg_expires_at disabled"),
	    "device facts: '%s'", sr_facts_list(SR_FACTS_DEVICE, NULL, 0, ""));
	CHECK(!strcmp(sr_facts_list(SR_FACTS_CARD, "carrier", 70, "  "),
	    "device\n  status stopped_by pkg_expires_at data_used_kb data_quota_kb refunded\n"
	    "  polling_paused"), "card facts wrapped before column 80: '%s'",
	    sr_facts_list(SR_FACTS_CARD, "carrier", 70, "  "));
	/* facts_write.lua deletes a fact under its old name too: its table
	 * of old names is this one's. */
	{
		const char *argv[64];
		int n = sr_facts_renames(argv, 64);

		for (int i = 0; i + 1 < n; i += 2) {
			char pair[64];

			snprintf(pair, sizeof pair, "%s = '%s'", argv[i + 1], argv[i]);
			CHECK(strstr(sr_lua_source[SR_LUA_FACTS_WRITE], pair) != NULL,
			    "facts_write.lua's legacyOf has %s", pair);
		}
	}
	return unit_done("test_facts");
}
