/* test_time_reply.c - a TIME reply read as Redis's clock (sr_time_reply_ms).
 * Every judgment and every fact's age is reckoned from it: a reply that is
 * no clock (an error while Redis loads or runs a long script, an ACL that
 * refuses TIME) must read as "no clock" (-1), never as 0, which would judge
 * every package unexpired and every fact fresh. */
#include <string.h>

#include "sr.h"
#include "unit.h"

/* The reply RESP text resp parses to (a real hiredis reader, as on the wire). */
static redisReply *
parse(const char *resp)
{
	redisReader *rd = redisReaderCreate();
	void *rep = NULL;

	redisReaderFeed(rd, resp, strlen(resp));
	if (redisReaderGetReply(rd, &rep) != REDIS_OK)
		rep = NULL;
	redisReaderFree(rd);
	return rep;
}

static int64_t
clock_of(const char *resp)
{
	redisReply *rep = parse(resp);
	int64_t ms = sr_time_reply_ms(rep);

	if (rep)
		freeReplyObject(rep);
	return ms;
}

int
main(void)
{
	CHECK(clock_of("*2\r\n$10\r\n1796000000\r\n$6\r\n123456\r\n") == 1796000000123LL,
	    "a clock, in ms: %lld", (long long)clock_of("*2\r\n$10\r\n1796000000\r\n$6\r\n123456\r\n"));
	CHECK(clock_of("*2\r\n$10\r\n1796000000\r\n$1\r\n0\r\n") == 1796000000000LL, "on the second");
	CHECK(clock_of("-BUSY Redis is busy running a script\r\n") == -1, "BUSY is no clock");
	CHECK(clock_of("-LOADING Redis is loading the dataset in memory\r\n") == -1, "LOADING is no clock");
	CHECK(clock_of("-NOPERM User srq has no permissions to run the 'time' command\r\n") == -1,
	    "an ACL's refusal is no clock");
	CHECK(clock_of("*0\r\n") == -1, "an empty array is no clock");
	CHECK(clock_of("*1\r\n$10\r\n1796000000\r\n") == -1, "seconds alone are no clock");
	CHECK(clock_of("*2\r\n:1796000000\r\n:5\r\n") == -1, "integers are not TIME's reply");
	CHECK(clock_of("*2\r\n$3\r\nabc\r\n$1\r\n5\r\n") == -1, "seconds not a number");
	CHECK(clock_of("*2\r\n$10\r\n1796000000\r\n$7\r\n1000000\r\n") == -1, "microseconds past a second");
	CHECK(clock_of("*2\r\n$1\r\n0\r\n$1\r\n5\r\n") == -1, "the epoch is no server's clock");
	CHECK(sr_time_reply_ms(NULL) == -1, "no reply (a connection lost) is no clock");
	return unit_done("time_reply");
}
