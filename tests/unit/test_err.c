/* The error table: names, completion statuses, and the public name
 * tables of uiwarp.h. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include <uiwarp/uiwarp.h>
#include "wire/err.h"

static const uiw_err_t all_errs[] = {
	UIW_E_RDMAP_LOCAL_CATA, UIW_E_RDMAP_INVALID_STAG,
	UIW_E_RDMAP_BASE_BOUNDS, UIW_E_RDMAP_ACCESS,
	UIW_E_RDMAP_STAG_NOT_ASSOC, UIW_E_RDMAP_TO_WRAP,
	UIW_E_RDMAP_PROT_CANT_INV, UIW_E_RDMAP_PROT_UNSPEC,
	UIW_E_RDMAP_INVALID_VERSION, UIW_E_RDMAP_UNEXPECTED_OPCODE,
	UIW_E_RDMAP_CATA_STREAM, UIW_E_RDMAP_CATA_GLOBAL,
	UIW_E_RDMAP_OP_CANT_INV, UIW_E_RDMAP_OP_UNSPEC,
	UIW_E_DDP_LOCAL_CATA, UIW_E_DDP_T_INVALID_STAG,
	UIW_E_DDP_T_BASE_BOUNDS, UIW_E_DDP_T_STAG_NOT_ASSOC,
	UIW_E_DDP_T_TO_WRAP, UIW_E_DDP_T_INVALID_VERSION,
	UIW_E_DDP_U_INVALID_QN, UIW_E_DDP_U_MSN_NO_BUF,
	UIW_E_DDP_U_MSN_RANGE, UIW_E_DDP_U_INVALID_MO,
	UIW_E_DDP_U_TOO_LONG, UIW_E_DDP_U_INVALID_VERSION,
	UIW_E_MPA_CLOSED, UIW_E_MPA_CRC, UIW_E_MPA_MARKER,
	UIW_E_MPA_INVALID_FRAME, UIW_E_MPA_LOCAL_CATA,
	UIW_E_MPA_INSUFFICIENT_IRD, UIW_E_MPA_NO_MATCHING_RTR,
};
#define N_ERRS (sizeof(all_errs) / sizeof(all_errs[0]))

static void test_every_error_named(void **state)
{
	size_t i, j;

	(void)state;
	for (i = 0; i < N_ERRS; i++) {
		const char *s = uiw_err_str(all_errs[i]);

		assert_non_null(s);
		assert_true(uiw_err_known(all_errs[i]));
		assert_true(strncmp(s, "layer ", 6) != 0);
		assert_true(strlen(s) > 8);
		for (j = 0; j < i; j++)
			assert_string_not_equal(s, uiw_err_str(all_errs[j]));
	}
	assert_string_equal(uiw_err_str(UIW_E_DDP_U_INVALID_QN),
			    "DDP untagged buffer error: invalid QN");
	assert_string_equal(uiw_err_str(UIW_E_MPA_CRC),
			    "MPA error: CRC mismatch");
	assert_string_equal(uiw_err_str(UIW_OK), "no error");
}

static void test_unknown_errors(void **state)
{
	(void)state;
	assert_false(uiw_err_known(UIW_ERR(1, 2, 0x09)));
	assert_string_equal(uiw_err_str(UIW_ERR(1, 2, 0x09)),
			    "layer 1 etype 2 code 0x09");
	assert_string_equal(uiw_err_str(UIW_ERR(15, 15, 0xff)),
			    "layer 15 etype 15 code 0xff");
	assert_false(uiw_err_known(UIW_ERR(2, 0, 0x08)));
	assert_false(uiw_err_known(UIW_OK));
	/* not a valid error value at all */
	assert_false(uiw_err_known(0x20000u | UIW_E_MPA_CRC));
	/* RFC 5040 Figure 9: a local catastrophic error takes any code */
	assert_true(uiw_err_known(UIW_ERR(0, 0, 0x5a)));
	assert_string_equal(uiw_err_str(UIW_ERR(0, 0, 0x5a)),
			    uiw_err_str(UIW_E_RDMAP_LOCAL_CATA));
	assert_true(uiw_err_known(UIW_ERR(1, 0, 0xff)));
	/* ... but the MPA codes are codes */
	assert_false(uiw_err_known(UIW_ERR(2, 0, 0x00)));
}

static void test_wc_status(void **state)
{
	size_t i;

	(void)state;
	assert_int_equal(uiw_err_wc_status(UIW_OK, 0), UIW_WC_SUCCESS);
	assert_int_equal(uiw_err_wc_status(UIW_OK, 1), UIW_WC_SUCCESS);
	/* protection */
	assert_int_equal(uiw_err_wc_status(UIW_E_RDMAP_INVALID_STAG, 1),
			 UIW_WC_REM_ACCESS_ERR);
	assert_int_equal(uiw_err_wc_status(UIW_E_RDMAP_INVALID_STAG, 0),
			 UIW_WC_LOC_PROT_ERR);
	assert_int_equal(uiw_err_wc_status(UIW_E_RDMAP_ACCESS, 1),
			 UIW_WC_REM_ACCESS_ERR);
	assert_int_equal(uiw_err_wc_status(UIW_E_DDP_T_BASE_BOUNDS, 1),
			 UIW_WC_REM_ACCESS_ERR);
	assert_int_equal(uiw_err_wc_status(UIW_E_DDP_T_BASE_BOUNDS, 0),
			 UIW_WC_LOC_PROT_ERR);
	/* length */
	assert_int_equal(uiw_err_wc_status(UIW_E_DDP_U_TOO_LONG, 0),
			 UIW_WC_LOC_LEN_ERR);
	assert_int_equal(uiw_err_wc_status(UIW_E_DDP_U_TOO_LONG, 1),
			 UIW_WC_REM_INV_REQ_ERR);
	/* operation */
	assert_int_equal(uiw_err_wc_status(UIW_E_RDMAP_UNEXPECTED_OPCODE, 0),
			 UIW_WC_BAD_RESP_ERR);
	assert_int_equal(uiw_err_wc_status(UIW_E_RDMAP_UNEXPECTED_OPCODE, 1),
			 UIW_WC_REM_INV_REQ_ERR);
	assert_int_equal(uiw_err_wc_status(UIW_E_RDMAP_CATA_STREAM, 1),
			 UIW_WC_REM_OP_ERR);
	assert_int_equal(uiw_err_wc_status(UIW_E_DDP_LOCAL_CATA, 0),
			 UIW_WC_LOC_QP_OP_ERR);
	/* local catastrophic with any code */
	assert_int_equal(uiw_err_wc_status(UIW_ERR(0, 0, 0x33), 1),
			 UIW_WC_REM_OP_ERR);
	/* every LLP error is fatal, known or not */
	for (i = 0; i < N_ERRS; i++)
		if (UIW_ERR_LAYER(all_errs[i]) == 2) {
			assert_int_equal(uiw_err_wc_status(all_errs[i], 0),
					 UIW_WC_FATAL_ERR);
			assert_int_equal(uiw_err_wc_status(all_errs[i], 1),
					 UIW_WC_FATAL_ERR);
		}
	assert_int_equal(uiw_err_wc_status(UIW_ERR(2, 3, 0x44), 0),
			 UIW_WC_FATAL_ERR);
	/* codes no RFC defines */
	assert_int_equal(uiw_err_wc_status(UIW_ERR(0, 1, 0x42), 1),
			 UIW_WC_REM_ACCESS_ERR);
	assert_int_equal(uiw_err_wc_status(UIW_ERR(1, 2, 0x42), 0),
			 UIW_WC_GENERAL_ERR);
	assert_int_equal(uiw_err_wc_status(UIW_ERR(1, 2, 0x42), 1),
			 UIW_WC_REM_OP_ERR);
	/* no error ever completes successfully or as a flush, and a
	 * peer's report always reads as remote (or fatal) */
	for (i = 0; i < N_ERRS; i++) {
		int l = uiw_err_wc_status(all_errs[i], 0);
		int r = uiw_err_wc_status(all_errs[i], 1);

		assert_int_not_equal(l, UIW_WC_SUCCESS);
		assert_int_not_equal(l, UIW_WC_WR_FLUSH_ERR);
		assert_true(r == UIW_WC_REM_ACCESS_ERR ||
			    r == UIW_WC_REM_INV_REQ_ERR ||
			    r == UIW_WC_REM_OP_ERR || r == UIW_WC_FATAL_ERR);
		assert_true(l != UIW_WC_REM_ACCESS_ERR &&
			    l != UIW_WC_REM_INV_REQ_ERR &&
			    l != UIW_WC_REM_OP_ERR);
	}
}

static void test_term_cause_str(void **state)
{
	struct uiw_term_cause c = { .layer = UIW_TERM_LAYER_DDP, .etype = 2,
				    .ecode = 1, .origin = UIW_TERM_REMOTE };

	(void)state;
	assert_string_equal(uiw_term_cause_str(&c),
			    "DDP untagged buffer error: invalid QN");
	c.origin = UIW_TERM_LOCAL;
	assert_string_equal(uiw_term_cause_str(&c),
			    "DDP untagged buffer error: invalid QN");
	c = (struct uiw_term_cause){ .layer = UIW_TERM_LAYER_LLP, .ecode = 1,
				     .origin = UIW_TERM_LLP };
	assert_string_equal(uiw_term_cause_str(&c),
			    uiw_err_str(UIW_E_MPA_CLOSED));
	c.origin = UIW_TERM_NONE;
	assert_string_equal(uiw_term_cause_str(&c), "no error");
	assert_string_equal(uiw_term_cause_str(NULL), "no error");
	c = (struct uiw_term_cause){ .layer = 7, .etype = 1, .ecode = 2,
				     .origin = UIW_TERM_REMOTE };
	assert_string_equal(uiw_term_cause_str(&c),
			    "layer 7 etype 1 code 0x02");
}

static void test_wc_status_str(void **state)
{
	int s, t;

	(void)state;
	for (s = UIW_WC_SUCCESS; s <= UIW_WC_GENERAL_ERR; s++) {
		const char *a = uiw_wc_status_str((enum uiw_wc_status)s);

		assert_non_null(a);
		assert_string_not_equal(a, "unknown status");
		for (t = UIW_WC_SUCCESS; t < s; t++)
			assert_string_not_equal(a,
				uiw_wc_status_str((enum uiw_wc_status)t));
	}
	assert_string_equal(uiw_wc_status_str(UIW_WC_SUCCESS), "success");
	assert_string_equal(uiw_wc_status_str(UIW_WC_REM_ACCESS_ERR),
			    "remote access error");
	assert_string_equal(uiw_wc_status_str((enum uiw_wc_status)99),
			    "unknown status");
	assert_string_equal(uiw_wc_status_str((enum uiw_wc_status)-1),
			    "unknown status");
}

static void test_qp_state_str(void **state)
{
	(void)state;
	assert_string_equal(uiw_qp_state_str(UIW_QPS_IDLE), "Idle");
	assert_string_equal(uiw_qp_state_str(UIW_QPS_RTS), "RTS");
	assert_string_equal(uiw_qp_state_str(UIW_QPS_CLOSING), "Closing");
	assert_string_equal(uiw_qp_state_str(UIW_QPS_TERMINATE), "Terminate");
	assert_string_equal(uiw_qp_state_str(UIW_QPS_ERROR), "Error");
	assert_string_equal(uiw_qp_state_str((enum uiw_qp_state)5),
			    "unknown state");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_error_named),
		cmocka_unit_test(test_unknown_errors),
		cmocka_unit_test(test_wc_status),
		cmocka_unit_test(test_term_cause_str),
		cmocka_unit_test(test_wc_status_str),
		cmocka_unit_test(test_qp_state_str),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
