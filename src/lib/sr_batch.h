/* sr_batch.h - the API of sr_batch.c. */
#ifndef SR_BATCH_H
#define SR_BATCH_H

#include <hiredis/hiredis.h>

/* A batch's items grouped by account: one script call per group, since an
 * account's keys share one hash tag (one slot) and its script reads and
 * writes the account's state once for all of them. Group g is the items
 * order[at .. at + size[g]) where at is the sum of the sizes before it. */
struct sr_batch {
	int *order;  /* item indexes, group after group */
	int *size;   /* each group's number of items */
	int ngroups, nitems;
};
/* Groups items 0..n-1 by account_of(items, i), NULL leaving the item out:
 * the accounts in the order they first appear, the items of an account in
 * input order (the order the script applies them in), at most max to a
 * group (a bigger account gets more groups; 0: no limit). */
void sr_batch_by_account(struct sr_batch *b, int n, const void *items,
    const char *(*account_of)(const void *items, int i), int max);
void sr_batch_free(struct sr_batch *b);
/* Item j's part of its group's reply: element per * j of an array reply
 * long enough, else the reply itself (an error, or a script that failed:
 * said to every item of the group alike). */
const redisReply *sr_batch_reply(const redisReply *rep, int j, int per);

#endif
