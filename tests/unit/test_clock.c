/* test_clock.c - readings of the Redis server's clock against ours
 * (sr_clock_sample): a forward step over the threshold is found whatever
 * the latency of the reading, its size bounded on both sides; latency,
 * NTP's slewing and a step under the threshold are no step; small steps
 * add up; a backward step starts the readings again. */
#include "sr.h"
#include "unit.h"

#define OFF 1800000000000LL /* Redis ms - mono ms, before any step */
#define THR 20

/* A reading at mono ms t, answered lat ms later, Redis's clock at OFF + skew
 * at the moment the script read it (half way). */
static int
reading(struct sr_clock *c, int64_t t, int lat, long long skew, long *lo, long *hi)
{
	return sr_clock_sample(c, t + lat / 2 + OFF + skew, t, t + lat, THR, lo, hi);
}

int
main(void)
{
	struct sr_clock c = { 0 };
	long lo = -1, hi = -1;
	int64_t t = 1000;

	/* Readings that agree, fast and slow: never a step. */
	for (int i = 0; i < 50; i++, t += 100)
		CHECK(reading(&c, t, i % 7 == 0 ? 800 : 2, 0, &lo, &hi) == 0, "agreeing reading %d", i);
	CHECK(c.known && c.hi - c.lo <= 5, "bounds from the fast readings: [%f, %f]", c.lo - OFF,
	    c.hi - OFF);

	/* A step of 300 ms: found at once, its size within the readings' slack. */
	CHECK(reading(&c, t, 2, 300, &lo, &hi) == 1, "a 300 ms step is found");
	CHECK(lo <= 300 && hi >= 300 && lo >= 290 && hi <= 310, "its size: [%ld, %ld]", lo, hi);
	t += 100;
	/* Once: the readings start again from it. */
	CHECK(reading(&c, t, 2, 300, &lo, &hi) == 0, "the same clock after the step: no step");

	/* However slow the reading that finds it, its size holds the step. */
	t += 100;
	CHECK(reading(&c, t, 3000, 300, &lo, &hi) == 0, "a reading over 3 s that agrees: no step");
	t += 100;
	CHECK(reading(&c, t, 3000, 400, &lo, &hi) == 0,
	    "a 100 ms step read over 3 s: not certain (the reading holds the old offset too)");
	t += 100;
	CHECK(reading(&c, t, 40, 800, &lo, &hi) == 1 && lo <= 500 && hi >= 500,
	    "then 400 ms more, read over 40 ms: 500 ms past the bounds, [%ld, %ld]", lo, hi);

	/* NTP's slewing (500 ppm): 50 minutes between two readings let the
	 * offset move by up to 1.5 s without a step. */
	t += 3000000;
	CHECK(reading(&c, t, 2, 800 + 1400, &lo, &hi) == 0, "1.4 s in 50 min is a slew, not a step");

	/* Steps under the threshold add up to one over it. */
	c = (struct sr_clock){ 0 };
	t = 1000;
	for (int i = 0; i < 5; i++, t += 100)
		reading(&c, t, 1, 0, &lo, &hi);
	CHECK(reading(&c, t, 1, 15, &lo, &hi) == 0, "15 ms: under the threshold");
	t += 100;
	CHECK(reading(&c, t, 1, 30, &lo, &hi) == 1 && lo <= 30 && hi >= 30,
	    "15 ms more: 30 ms since the bounds, found: [%ld, %ld]", lo, hi);

	/* A backward step: no step, and a forward one after it is measured
	 * from the new clock. */
	t += 100;
	CHECK(reading(&c, t, 1, -1000, &lo, &hi) == 0, "backward: no step");
	t += 100;
	CHECK(reading(&c, t, 1, -1000, &lo, &hi) == 0, "the clock after it agrees");
	t += 100;
	CHECK(reading(&c, t, 1, -700, &lo, &hi) == 1 && lo <= 300 && hi >= 300 && lo > 280,
	    "300 ms forward from there: [%ld, %ld]", lo, hi);
	return unit_done("test_clock");
}
