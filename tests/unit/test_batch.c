/* test_batch.c - a batch grouped by account (sr_batch_by_account): what
 * sr-enqueue, sr-exec's gate and sr-confirm send one script call each for.
 * A wrong group sends a card's command under another account's hash tag;
 * a wrong order applies an account's items out of input order. */
#include <string.h>

#include "sr.h"
#include "unit.h"

static const char *
account_of(const void *items, int i)
{
	const char *const *a = items;

	return a[i][0] == '-' ? NULL : a[i];
}

/* The groups as text: "a:0,2 b:1" (item indexes of each group). */
static const char *
shape(const struct sr_batch *b, const char *const *items)
{
	static char out[256];
	size_t len = 0;

	out[0] = '\0';
	for (int g = 0, at = 0; g < b->ngroups; at += b->size[g++]) {
		len += (size_t)snprintf(out + len, sizeof out - len, "%s%s:", g ? " " : "",
		    items[b->order[at]]);
		for (int k = 0; k < b->size[g]; k++)
			len += (size_t)snprintf(out + len, sizeof out - len, "%s%d", k ? "," : "",
			    b->order[at + k]);
	}
	return out;
}

int
main(void)
{
	const char *mixed[] = { "a", "b", "a", "-", "c", "b", "a" };
	const char *none[] = { "-", "-" };
	struct sr_batch b;
	redisReply parts[2], *elems[2] = { &parts[0], &parts[1] }, arr, err;

	sr_batch_by_account(&b, 7, mixed, account_of, 0);
	CHECK(!strcmp(shape(&b, mixed), "a:0,2,6 b:1,5 c:4"), "grouped: %s", shape(&b, mixed));
	CHECK(b.nitems == 6, "items: %d (the one left out not counted)", b.nitems);
	sr_batch_free(&b);

	/* At most 2 to a call: an account's items in order across its calls. */
	sr_batch_by_account(&b, 7, mixed, account_of, 2);
	CHECK(!strcmp(shape(&b, mixed), "a:0,2 a:6 b:1,5 c:4"), "max 2: %s", shape(&b, mixed));
	sr_batch_free(&b);

	sr_batch_by_account(&b, 2, none, account_of, 0);
	CHECK(b.ngroups == 0 && b.nitems == 0, "none: %d groups", b.ngroups);
	sr_batch_free(&b);
	sr_batch_by_account(&b, 0, none, account_of, 0);
	CHECK(b.ngroups == 0, "empty: %d groups", b.ngroups);
	sr_batch_free(&b);

	/* A group's reply split: item j's element, or the error for all. */
	memset(&arr, 0, sizeof arr);
	arr.type = REDIS_REPLY_ARRAY;
	arr.elements = 2;
	arr.element = elems;
	CHECK(sr_batch_reply(&arr, 1, 1) == &parts[1], "item 1 of 2");
	CHECK(sr_batch_reply(&arr, 0, 2) == &parts[0], "item 0, two elements each");
	CHECK(sr_batch_reply(&arr, 1, 2) == &arr, "short reply: the whole reply for item 1");
	memset(&err, 0, sizeof err);
	err.type = REDIS_REPLY_ERROR;
	CHECK(sr_batch_reply(&err, 0, 1) == &err, "an error is every item's");
	return unit_done("test_batch");
}
