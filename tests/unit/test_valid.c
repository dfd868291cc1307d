/* test_valid.c - input validation: ids, scenes and their priority, fields. */
#include <string.h>

#include "sr.h"
#include "unit.h"

int
main(void)
{
	static const char *good[] = { "a", "89860012345678901234", "c17", "D-42_x.y",
		"0123456789012345678901234567890123456789012345678901234567890123", NULL };
	static const char *bad[] = { "", "a b", "a/b", "a:b", "{c17}", "é", "a\nb", "a*",
		"01234567890123456789012345678901234567890123456789012345678901234", NULL };
	static const char *allowed[] = { "card", "scene", NULL };
	json_t *o;

	for (int i = 0; good[i]; i++)
		CHECK(sr_valid_id(good[i]), "'%s' is a valid id", good[i]);
	for (int i = 0; bad[i]; i++)
		CHECK(!sr_valid_id(bad[i]), "'%s' is not a valid id", bad[i]);
	CHECK(!sr_valid_id(NULL), "NULL is not a valid id");

	CHECK(sr_scene_prio("order") == SR_PRIO_HIGH, "order is high priority");
	CHECK(sr_scene_prio("activation") == SR_PRIO_HIGH, "activation is high priority");
	CHECK(sr_scene_prio("package_expired") == SR_PRIO_NORMAL, "package_expired is normal");
	CHECK(sr_scene_prio("reset") == SR_PRIO_BULK, "reset is bulk");
	CHECK(sr_scene_prio("manual_recheck") == SR_PRIO_NORMAL, "manual_recheck is normal");
	CHECK(sr_scene_prio("Order") == -1, "scenes are case-sensitive");
	CHECK(sr_scene_prio("bogus") == -1, "unknown scene");
	CHECK(sr_scene_prio(NULL) == -1, "missing scene");

	o = json_pack("{ss ss}", "card", "x", "scene", "order");
	CHECK(sr_unknown_key(o, allowed) == NULL, "known keys pass");
	json_object_set_new(o, "colour", json_string("red"));
	CHECK(sr_unknown_key(o, allowed) && !strcmp(sr_unknown_key(o, allowed), "colour"),
	    "unknown key is named");
	json_decref(o);

	CHECK(sr_parse_long("42") == 42, "parse 42");
	CHECK(sr_parse_long("-1") == -1 && sr_parse_long("4x") == -1 && sr_parse_long("") == -1,
	    "parse rejects signs, junk and empty");
	return unit_done("test_valid");
}
