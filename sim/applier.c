/* applier.c - sr-gwsim's changes accepted now and landed later
 * (--async-ms): a min-heap of pending changes, the applier thread that
 * lands them on time, and every accepted change's order, which an order
 * status query answers from.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gwsim.h"

/* An accepted change that lands later (--async-ms), in a min-heap on due
 * (then n, the acceptance order, so a card's changes land in order). */
struct pending {
	int64_t due;
	unsigned long n;
	char card[65], carrier[65], key[160], txn[24];
	enum state state;
};

static pthread_cond_t wake = PTHREAD_COND_INITIALIZER; /* the applier's */
static struct pending *pend;
static size_t npend, cappend;
static int stopping;
static pthread_t applier_thread;
/* Every accepted change's order, by its number (txn T<n> at n - 1): an
 * order status query (K_ORDER) answers from it. */
struct order {
	char card[65], carrier[65];
	int64_t due;      /* when it lands, or fails */
	int fails;        /* --fault-order-failed: it never lands */
};
static struct order *orders;
static size_t capord;
static unsigned long ntxn;
char txn_prefix = 'T'; /* OneLink says jobId J<n> */

static int
pending_before(const struct pending *a, const struct pending *b)
{
	return a->due < b->due || (a->due == b->due && a->n < b->n);
}

static void
pending_swap(size_t i, size_t j)
{
	struct pending t = pend[i];

	pend[i] = pend[j];
	pend[j] = t;
}

/* Accept a change to land async_ms from now; its txn goes into c (caller
 * holds mu). */
void
schedule(struct call *c, enum state want, int fails)
{
	struct pending *p;
	struct order *o;
	size_t i;

	if (ntxn == capord) {
		capord = capord ? capord * 2 : 64;
		orders = sr_realloc(orders, capord * sizeof *orders);
	}
	o = &orders[ntxn++];
	snprintf(o->card, sizeof o->card, "%s", c->card);
	snprintf(o->carrier, sizeof o->carrier, "%s", c->carrier);
	o->due = now_ms() + async_ms;
	o->fails = fails;
	snprintf(c->txn, sizeof c->txn, "%c%lu", txn_prefix, ntxn);
	if (fails)
		return; /* accepted, and it will fail: nothing lands */
	if (npend == cappend) {
		cappend = cappend ? cappend * 2 : 64;
		pend = sr_realloc(pend, cappend * sizeof *pend);
	}
	p = &pend[i = npend++];
	memset(p, 0, sizeof *p);
	p->due = o->due;
	p->n = ntxn;
	p->state = want;
	snprintf(p->card, sizeof p->card, "%s", c->card);
	snprintf(p->carrier, sizeof p->carrier, "%s", c->carrier);
	snprintf(p->key, sizeof p->key, "%s", c->key);
	snprintf(p->txn, sizeof p->txn, "%s", c->txn);
	for (; i > 0 && pending_before(&pend[i], &pend[(i - 1) / 2]); i = (i - 1) / 2)
		pending_swap(i, (i - 1) / 2);
	pthread_cond_signal(&wake);
}

/* Take the earliest pending change off the heap into *p. */
static void
pending_pop(struct pending *p)
{
	size_t i = 0, l, m;

	*p = pend[0];
	pend[0] = pend[--npend];
	for (;;) {
		m = i;
		l = 2 * i + 1;
		if (l < npend && pending_before(&pend[l], &pend[m]))
			m = l;
		if (l + 1 < npend && pending_before(&pend[l + 1], &pend[m]))
			m = l + 1;
		if (m == i)
			break;
		pending_swap(i, m);
		i = m;
	}
}

/* Land every change due by now, each logged as an "apply" line stamped
 * with its due time (caller holds mu). */
void
apply_due(int64_t now)
{
	struct pending p;
	struct call c;
	struct answer a;

	while (npend > 0 && pend[0].due <= now) {
		pending_pop(&p);
		memset(&c, 0, sizeof c);
		memset(&a, 0, sizeof a);
		c.kind = K_APPLY;
		snprintf(c.card, sizeof c.card, "%s", p.card);
		snprintf(c.carrier, sizeof c.carrier, "%s", p.carrier);
		snprintf(c.key, sizeof c.key, "%s", p.key);
		snprintf(c.txn, sizeof c.txn, "%s", p.txn);
		c.arrived = p.due;
		c.v = V_OK;
		c.state = card_get(p.card, p.carrier)->state = p.state;
		c.applied = 1;
		c.fault = "async";
		a.code = "APPLIED";
		log_call(&c, &a);
	}
}

/* The applier thread: lands pending changes on time, requests or not. */
static void *
applier(void *arg)
{
	struct timespec ts;

	(void)arg;
	pthread_mutex_lock(&mu);
	while (!stopping) {
		apply_due(now_ms());
		if (npend == 0) {
			pthread_cond_wait(&wake, &mu);
			continue;
		}
		ts.tv_sec = pend[0].due / 1000;
		ts.tv_nsec = pend[0].due % 1000 * 1000000;
		pthread_cond_timedwait(&wake, &mu, &ts);
	}
	pthread_mutex_unlock(&mu);
	return NULL;
}

/* The order a txn names (this run's T<n>, or J<n>: its number n), or NULL
 * (caller holds mu). */
static struct order *
order_get(const char *txn, unsigned long *n)
{
	char *end;
	unsigned long v;

	if (txn[0] != txn_prefix || !isdigit((unsigned char)txn[1]))
		return NULL;
	v = strtoul(txn + 1, &end, 10);
	if (*end || v == 0 || v > ntxn)
		return NULL;
	*n = v;
	return &orders[v - 1];
}

/* How an order stands now: pending until it lands (or fails). */
static const char *
order_word(const struct order *o, int64_t now)
{
	return now < o->due ? "pending" : o->fails ? "failed" : "done";
}

/* An order status query: the account's own order, or none (not allowed:
 * the shape's "no such order"). --fault-other-order: the answer is
 * another order's (the one before it), as a carrier mixing up a card's
 * orders would answer; its card is still the one asked. */
void
decide_order(struct call *c)
{
	unsigned long n;
	struct order *o = order_get(c->txn, &n);
	int64_t now = now_ms();

	if (!o || strcmp(o->carrier, c->carrier)) {
		c->v = V_NOT_ALLOWED;
		return;
	}
	c->v = V_OK;
	snprintf(c->card, sizeof c->card, "%s", o->card);
	snprintf(c->named_txn, sizeof c->named_txn, "%s", c->txn);
	c->order = order_word(o, now);
	if (pother_order > 0 && ntxn > 1 && coin() < pother_order) {
		unsigned long other = n == 1 ? 2 : n - 1;

		snprintf(c->named_txn, sizeof c->named_txn, "%c%lu", txn_prefix, other);
		c->order = order_word(&orders[other - 1], now);
		c->fault = "other_order";
	}
}

/* Start the applier thread: 0, or an errno. */
int
applier_start(void)
{
	return pthread_create(&applier_thread, NULL, applier, NULL);
}

/* Stop the applier thread: what is still pending never lands. */
void
applier_stop(void)
{
	pthread_mutex_lock(&mu);
	stopping = 1;
	pthread_cond_signal(&wake);
	pthread_mutex_unlock(&mu);
	pthread_join(applier_thread, NULL);
}

void
applier_free(void)
{
	free(pend);
	free(orders);
}
