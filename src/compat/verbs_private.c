/*
 * The drop-in libibverbs.so.1: rdma-core 44's provider interface
 * (version node IBVERBS_PRIVATE_34), which providers such as libmlx5
 * and libefa import.  Programs like perftest link those providers, so
 * the symbols must resolve when they load; no provider ever gets a
 * device here (the one device is uiwarp's own), so none of these does
 * anything: registering a driver is ignored, and a command fails with
 * EOPNOTSUPP.  Their arguments (rdma-core's internal types) are not
 * used, so they are declared without them.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>

#include "verbs_priv.h"

/* rdma-core 44: a process-wide flag providers read. */
bool verbs_allow_disassociate_destroy;

#define VC_CMD(name)				\
	int name(void);				\
	int name(void)				\
	{					\
		return EOPNOTSUPP;		\
	}
#define VC_NOP(name)				\
	void name(void);			\
	void name(void)				\
	{					\
	}
#define VC_NULL(name)				\
	void *name(void);			\
	void *name(void)			\
	{					\
		errno = EOPNOTSUPP;		\
		return NULL;			\
	}

/* A provider's constructor registers its driver: nothing to do. */
VC_NOP(verbs_register_driver_34)
VC_NOP(verbs_set_ops)
VC_NOP(verbs_uninit_context)
VC_NOP(verbs_init_cq)
VC_NOP(__verbs_log)
VC_NULL(_verbs_init_and_alloc_context)
VC_NULL(verbs_open_device)

unsigned int __ioctl_final_num_attrs(void);
unsigned int __ioctl_final_num_attrs(void)
{
	return 0;
}

int ibv_read_ibdev_sysfs_file(void);
int ibv_read_ibdev_sysfs_file(void)
{
	errno = ENOENT;
	return -1;
}

VC_CMD(execute_ioctl)
VC_CMD(ibv_cmd_advise_mr)
VC_CMD(ibv_cmd_alloc_dm)
VC_CMD(ibv_cmd_alloc_mw)
VC_CMD(ibv_cmd_alloc_pd)
VC_CMD(ibv_cmd_attach_mcast)
VC_CMD(ibv_cmd_close_xrcd)
VC_CMD(ibv_cmd_create_ah)
VC_CMD(ibv_cmd_create_counters)
VC_CMD(ibv_cmd_create_cq)
VC_CMD(ibv_cmd_create_cq_ex)
VC_CMD(ibv_cmd_create_flow)
VC_CMD(ibv_cmd_create_flow_action_esp)
VC_CMD(ibv_cmd_create_qp)
VC_CMD(ibv_cmd_create_qp_ex)
VC_CMD(ibv_cmd_create_qp_ex2)
VC_CMD(ibv_cmd_create_rwq_ind_table)
VC_CMD(ibv_cmd_create_srq)
VC_CMD(ibv_cmd_create_srq_ex)
VC_CMD(ibv_cmd_create_wq)
VC_CMD(ibv_cmd_dealloc_mw)
VC_CMD(ibv_cmd_dealloc_pd)
VC_CMD(ibv_cmd_dereg_mr)
VC_CMD(ibv_cmd_destroy_ah)
VC_CMD(ibv_cmd_destroy_counters)
VC_CMD(ibv_cmd_destroy_cq)
VC_CMD(ibv_cmd_destroy_flow)
VC_CMD(ibv_cmd_destroy_flow_action)
VC_CMD(ibv_cmd_destroy_qp)
VC_CMD(ibv_cmd_destroy_rwq_ind_table)
VC_CMD(ibv_cmd_destroy_srq)
VC_CMD(ibv_cmd_destroy_wq)
VC_CMD(ibv_cmd_detach_mcast)
VC_CMD(ibv_cmd_free_dm)
VC_CMD(ibv_cmd_get_context)
VC_CMD(ibv_cmd_modify_cq)
VC_CMD(ibv_cmd_modify_flow_action_esp)
VC_CMD(ibv_cmd_modify_qp)
VC_CMD(ibv_cmd_modify_qp_ex)
VC_CMD(ibv_cmd_modify_srq)
VC_CMD(ibv_cmd_modify_wq)
VC_CMD(ibv_cmd_open_qp)
VC_CMD(ibv_cmd_open_xrcd)
VC_CMD(ibv_cmd_poll_cq)
VC_CMD(ibv_cmd_post_recv)
VC_CMD(ibv_cmd_post_send)
VC_CMD(ibv_cmd_post_srq_recv)
VC_CMD(ibv_cmd_query_context)
VC_CMD(ibv_cmd_query_device_any)
VC_CMD(ibv_cmd_query_mr)
VC_CMD(ibv_cmd_query_port)
VC_CMD(ibv_cmd_query_qp)
VC_CMD(ibv_cmd_query_srq)
VC_CMD(ibv_cmd_read_counters)
VC_CMD(ibv_cmd_reg_dm_mr)
VC_CMD(ibv_cmd_reg_dmabuf_mr)
VC_CMD(ibv_cmd_reg_mr)
VC_CMD(ibv_cmd_req_notify_cq)
VC_CMD(ibv_cmd_rereg_mr)
VC_CMD(ibv_cmd_resize_cq)
