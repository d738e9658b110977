/*
 * uiwarp-nfs's client library without a server: the nfsstat3 table
 * (RFC 1813 §2.6), path splitting, the size and progress texts, and
 * rsize/wsize against the server's FSINFO.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "nfs_client.h"

static void test_stat_table(void **state)
{
	/* every value of nfsstat3: a name, a text, and strerror's text
	 * where the value is an errno (§2.6 takes them from there) */
	static const struct {
		int st;
		const char *name;
		int err;        /* 0: none */
	} want[] = {
		{ NFS3ERR_PERM, "NFS3ERR_PERM", EPERM },
		{ NFS3ERR_NOENT, "NFS3ERR_NOENT", ENOENT },
		{ NFS3ERR_IO, "NFS3ERR_IO", EIO },
		{ NFS3ERR_NXIO, "NFS3ERR_NXIO", ENXIO },
		{ NFS3ERR_ACCES, "NFS3ERR_ACCES", EACCES },
		{ NFS3ERR_EXIST, "NFS3ERR_EXIST", EEXIST },
		{ NFS3ERR_XDEV, "NFS3ERR_XDEV", EXDEV },
		{ NFS3ERR_NODEV, "NFS3ERR_NODEV", ENODEV },
		{ NFS3ERR_NOTDIR, "NFS3ERR_NOTDIR", ENOTDIR },
		{ NFS3ERR_ISDIR, "NFS3ERR_ISDIR", EISDIR },
		{ NFS3ERR_INVAL, "NFS3ERR_INVAL", EINVAL },
		{ NFS3ERR_FBIG, "NFS3ERR_FBIG", EFBIG },
		{ NFS3ERR_NOSPC, "NFS3ERR_NOSPC", ENOSPC },
		{ NFS3ERR_ROFS, "NFS3ERR_ROFS", EROFS },
		{ NFS3ERR_MLINK, "NFS3ERR_MLINK", EMLINK },
		{ NFS3ERR_NAMETOOLONG, "NFS3ERR_NAMETOOLONG", ENAMETOOLONG },
		{ NFS3ERR_NOTEMPTY, "NFS3ERR_NOTEMPTY", ENOTEMPTY },
		{ NFS3ERR_DQUOT, "NFS3ERR_DQUOT", EDQUOT },
		{ NFS3ERR_STALE, "NFS3ERR_STALE", ESTALE },
		{ NFS3ERR_REMOTE, "NFS3ERR_REMOTE", 0 },
		{ NFS3ERR_BADHANDLE, "NFS3ERR_BADHANDLE", 0 },
		{ NFS3ERR_NOT_SYNC, "NFS3ERR_NOT_SYNC", 0 },
		{ NFS3ERR_BAD_COOKIE, "NFS3ERR_BAD_COOKIE", 0 },
		{ NFS3ERR_NOTSUPP, "NFS3ERR_NOTSUPP", 0 },
		{ NFS3ERR_TOOSMALL, "NFS3ERR_TOOSMALL", 0 },
		{ NFS3ERR_SERVERFAULT, "NFS3ERR_SERVERFAULT", 0 },
		{ NFS3ERR_BADTYPE, "NFS3ERR_BADTYPE", 0 },
		{ NFS3ERR_JUKEBOX, "NFS3ERR_JUKEBOX", 0 },
	};
	char buf[32];
	size_t i;

	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		assert_string_equal(nfsc_stat_name(want[i].st, buf,
						   sizeof(buf)), want[i].name);
		assert_string_not_equal(nfsc_stat_text(want[i].st),
					"unknown error");
		if (want[i].err)
			assert_string_equal(nfsc_stat_text(want[i].st),
					    strerror(want[i].err));
	}
	assert_string_equal(nfsc_stat_name(NFS3_OK, buf, sizeof(buf)),
			    "NFS3_OK");
	assert_string_equal(nfsc_stat_name(4242, buf, sizeof(buf)),
			    "NFS3ERR_#4242");
	assert_string_equal(nfsc_stat_text(4242), "unknown error");
	assert_null(nfsc_stat_suffix(4242));
	/* MOUNT's numbers are NFS's (RFC 1813 §5.1.5) */
	assert_string_equal(nfsc_stat_suffix(MNT3ERR_ACCES), "ACCES");
	assert_string_equal(nfsc_stat_suffix(MNT3ERR_SERVERFAULT),
			    "SERVERFAULT");
}

static void test_path_split(void **state)
{
	const char *p[8];
	char buf[64], longname[300];

	assert_int_equal(nfsc_path_split("/", buf, sizeof(buf), p, 8), 0);
	assert_int_equal(nfsc_path_split("", buf, sizeof(buf), p, 8), 0);
	assert_int_equal(nfsc_path_split("//a///b/./c/", buf, sizeof(buf),
					 p, 8), 3);
	assert_string_equal(p[0], "a");
	assert_string_equal(p[1], "b");
	assert_string_equal(p[2], "c");
	assert_int_equal(nfsc_path_split("x/../y", buf, sizeof(buf), p, 8), 3);
	assert_string_equal(p[1], "..");
	/* too many parts, a buffer too small, a name over 255 */
	assert_int_equal(nfsc_path_split("a/b/c", buf, sizeof(buf), p, 2), -1);
	assert_int_equal(nfsc_path_split("abcdef", buf, 4, p, 8), -1);
	memset(longname, 'n', 256);
	longname[256] = 0;
	{
		char big[400];

		assert_int_equal(nfsc_path_split(longname, big, sizeof(big),
						 p, 8), -1);
		longname[255] = 0;
		assert_int_equal(nfsc_path_split(longname, big, sizeof(big),
						 p, 8), 1);
	}
}

static void test_fmt(void **state)
{
	char b[128];

	nfsc_fmt_size(0, b, sizeof(b));
	assert_string_equal(b, "0 B");
	nfsc_fmt_size(1023, b, sizeof(b));
	assert_string_equal(b, "1023 B");
	nfsc_fmt_size(1536, b, sizeof(b));
	assert_string_equal(b, "1.50 KiB");
	nfsc_fmt_size(64ull << 20, b, sizeof(b));
	assert_string_equal(b, "64.0 MiB");
	nfsc_fmt_size(500ull << 30, b, sizeof(b));
	assert_string_equal(b, "500 GiB");
	nfsc_fmt_size(UINT64_MAX, b, sizeof(b));
	assert_string_equal(b, "16.0 EiB");

	nfsc_fmt_progress(5000000, 20000000, 2.0, b, sizeof(b));
	assert_string_equal(b, "5000000 / 20000000 bytes (25%), 2.50 MB/s");
	nfsc_fmt_progress(7, 0, 0, b, sizeof(b));
	assert_string_equal(b, "7 bytes, 0.00 MB/s");
	/* a file that grew while read: never over 100 % */
	nfsc_fmt_progress(30, 20, 1, b, sizeof(b));
	assert_string_equal(b, "30 / 20 bytes (100%), 0.00 MB/s");
}

static void test_sizes(void **state)
{
	struct nfsc c;

	memset(&c, 0, sizeof(c));
	/* no FSINFO: 64 KiB */
	assert_int_equal(nfsc_rsize(&c, 0), 65536);
	c.fsinfo.rtmax = 1 << 20;
	c.fsinfo.rtpref = 128 << 10;
	c.fsinfo.wtmax = 512 << 10;
	c.fsinfo.wtpref = 1 << 20;    /* a preference over the maximum */
	assert_int_equal(nfsc_rsize(&c, 0), 128 << 10);
	assert_int_equal(nfsc_rsize(&c, 4096), 4096);
	assert_int_equal(nfsc_rsize(&c, 8 << 20), 1 << 20);
	assert_int_equal(nfsc_wsize(&c, 0), 512 << 10);
	assert_int_equal(nfsc_wsize(&c, 1000), 1000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stat_table),
		cmocka_unit_test(test_path_split),
		cmocka_unit_test(test_fmt),
		cmocka_unit_test(test_sizes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
