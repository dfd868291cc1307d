/* test_slot.c - the cluster slot of a key, as Redis computes it (the
 * expected slots are what CLUSTER KEYSLOT answers). */
#include <string.h>

#include "sr.h"
#include "unit.h"

static unsigned
slot(const char *key)
{
	return sr_key_slot(key, strlen(key));
}

int
main(void)
{
	CHECK(slot("123456789") == 12739, "123456789: %u (CRC16 0x31C3)", slot("123456789"));
	CHECK(slot("somekey") == 11058, "somekey: %u", slot("somekey"));
	/* The hash tag: the first {...} that is not empty. */
	CHECK(slot("foo{hash_tag}") == 2515, "foo{hash_tag}: %u", slot("foo{hash_tag}"));
	CHECK(slot("foo{}{bar}") == 8363, "foo{}{bar}: %u (an empty tag: the whole key)",
	    slot("foo{}{bar}"));
	CHECK(slot("foo{{bar}}zap") == 4015, "foo{{bar}}zap: %u (the tag is '{bar')",
	    slot("foo{{bar}}zap"));
	CHECK(slot("foo{bar}{zap}") == 5061, "foo{bar}{zap}: %u (the first tag)", slot("foo{bar}{zap}"));
	/* An account's keys all land with the account. */
	CHECK(slot("t:carrier:{c1}:card:1") == 14347 && slot("t:carrier:{c1}:audit") == slot("c1"),
	    "t:carrier:{c1}:card:1: %u", slot("t:carrier:{c1}:card:1"));
	CHECK(slot("{unclosed") == slot("{unclosed") && slot("") == 0, "edge cases");
	return unit_done("test_slot");
}
