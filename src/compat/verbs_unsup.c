/*
 * The drop-in libibverbs.so.1: what uiwarp does not do.  Each entry
 * fails with EOPNOTSUPP and, under UIWARP_DEBUG, one line
 * "uiwarp: <what> is not supported" (uiw_compat_unsupported).
 *
 * iWARP has no address handles, multicast, UD/UC/XRC or raw packet
 * QPs; the rest (memory windows, ODP, dmabuf and device memory, flows,
 * WQs and RSS tables, counters, import of objects across processes,
 * ECE) is device machinery that uiwarp does not have.
 */
#include <errno.h>

#include "verbs_priv.h"

/* An exported verbs function or a context op that is not supported: its
 * signature, and what it returns after saying so. */
#define VC_UNSUP(ret, name, what, fail, ...)			\
	ret name(__VA_ARGS__);					\
	ret name(__VA_ARGS__)					\
	{							\
		uiw_compat_unsupported(what);			\
		return fail;					\
	}
#define VC_UNSUP_VOID(name, what, ...)				\
	void name(__VA_ARGS__);					\
	void name(__VA_ARGS__)					\
	{							\
		uiw_compat_unsupported(what);			\
	}

VC_UNSUP(struct ibv_ah *, ibv_create_ah, "address handles", NULL,
	 struct ibv_pd *pd, struct ibv_ah_attr *attr)
VC_UNSUP(int, ibv_destroy_ah, "address handles", EOPNOTSUPP,
	 struct ibv_ah *ah)
VC_UNSUP(struct ibv_ah *, ibv_create_ah_from_wc, "address handles", NULL,
	 struct ibv_pd *pd, struct ibv_wc *wc, struct ibv_grh *grh,
	 uint8_t port_num)
VC_UNSUP(int, ibv_init_ah_from_wc, "address handles", -1,
	 struct ibv_context *context, uint8_t port_num, struct ibv_wc *wc,
	 struct ibv_grh *grh, struct ibv_ah_attr *ah_attr)
VC_UNSUP(int, ibv_resolve_eth_l2_from_gid, "address handles", EOPNOTSUPP,
	 struct ibv_context *context, struct ibv_ah_attr *attr,
	 uint8_t eth_mac[6], uint16_t *vid)
VC_UNSUP(int, ibv_attach_mcast, "multicast", EOPNOTSUPP,
	 struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
VC_UNSUP(int, ibv_detach_mcast, "multicast", EOPNOTSUPP,
	 struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
VC_UNSUP(int, ibv_rereg_mr, "ibv_rereg_mr", EOPNOTSUPP,
	 struct ibv_mr *mr, int flags, struct ibv_pd *pd, void *addr,
	 size_t length, int access)
VC_UNSUP(struct ibv_mr *, ibv_reg_dmabuf_mr, "dmabuf MRs", NULL,
	 struct ibv_pd *pd, uint64_t offset, size_t length, uint64_t iova,
	 int fd, int access)
VC_UNSUP(struct ibv_context *, ibv_import_device, "ibv_import_device", NULL,
	 int cmd_fd)
VC_UNSUP(struct ibv_pd *, ibv_import_pd, "ibv_import_pd", NULL,
	 struct ibv_context *context, uint32_t pd_handle)
VC_UNSUP(struct ibv_mr *, ibv_import_mr, "ibv_import_mr", NULL,
	 struct ibv_pd *pd, uint32_t mr_handle)
VC_UNSUP(struct ibv_dm *, ibv_import_dm, "ibv_import_dm", NULL,
	 struct ibv_context *context, uint32_t dm_handle)
VC_UNSUP_VOID(ibv_unimport_pd, "ibv_unimport_pd", struct ibv_pd *pd)
VC_UNSUP_VOID(ibv_unimport_mr, "ibv_unimport_mr", struct ibv_mr *mr)
VC_UNSUP_VOID(ibv_unimport_dm, "ibv_unimport_dm", struct ibv_dm *dm)
VC_UNSUP(int, ibv_set_ece, "ECE", EOPNOTSUPP,
	 struct ibv_qp *qp, struct ibv_ece *ece)
VC_UNSUP(int, ibv_query_ece, "ECE", EOPNOTSUPP,
	 struct ibv_qp *qp, struct ibv_ece *ece)

/* Direct placement may write a message's segments in any order (RFC 5041
 * §5: DDP places each segment on arrival): no in-order guarantee. */
int ibv_query_qp_data_in_order(struct ibv_qp *qp, enum ibv_wr_opcode op,
			       uint32_t flags)
{
	return 0;
}

/* The context ops behind verbs.h's inline functions. */
VC_UNSUP(struct ibv_mw *, vc_alloc_mw, "memory windows", NULL,
	 struct ibv_pd *pd, enum ibv_mw_type type)
VC_UNSUP(int, vc_dealloc_mw, "memory windows", EOPNOTSUPP,
	 struct ibv_mw *mw)
VC_UNSUP(int, vc_bind_mw, "memory windows", EOPNOTSUPP,
	 struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *bind)
VC_UNSUP(int, vc_advise_mr, "on-demand paging (ibv_advise_mr)", EOPNOTSUPP,
	 struct ibv_pd *pd, enum ibv_advise_mr_advice advice, uint32_t flags,
	 struct ibv_sge *sg_list, uint32_t num_sges)
VC_UNSUP(struct ibv_dm *, vc_alloc_dm, "device memory", NULL,
	 struct ibv_context *context, struct ibv_alloc_dm_attr *attr)
VC_UNSUP(int, vc_free_dm, "device memory", EOPNOTSUPP, struct ibv_dm *dm)
VC_UNSUP(struct ibv_mr *, vc_reg_dm_mr, "device memory", NULL,
	 struct ibv_pd *pd, struct ibv_dm *dm, uint64_t dm_offset,
	 size_t length, unsigned int access)
VC_UNSUP(struct ibv_flow *, vc_create_flow, "flows", NULL,
	 struct ibv_qp *qp, struct ibv_flow_attr *flow_attr)
VC_UNSUP(int, vc_destroy_flow, "flows", EOPNOTSUPP, struct ibv_flow *flow)
VC_UNSUP(struct ibv_flow_action *, vc_create_flow_action_esp, "flows", NULL,
	 struct ibv_context *context, struct ibv_flow_action_esp_attr *attr)
VC_UNSUP(struct ibv_wq *, vc_create_wq, "work queues", NULL,
	 struct ibv_context *context, struct ibv_wq_init_attr *attr)
VC_UNSUP(int, vc_modify_wq, "work queues", EOPNOTSUPP,
	 struct ibv_wq *wq, struct ibv_wq_attr *attr)
VC_UNSUP(int, vc_destroy_wq, "work queues", EOPNOTSUPP, struct ibv_wq *wq)
VC_UNSUP(struct ibv_rwq_ind_table *, vc_create_rwq_ind_table,
	 "RWQ indirection tables", NULL, struct ibv_context *context,
	 struct ibv_rwq_ind_table_init_attr *attr)
VC_UNSUP(int, vc_destroy_rwq_ind_table, "RWQ indirection tables",
	 EOPNOTSUPP, struct ibv_rwq_ind_table *t)
VC_UNSUP(struct ibv_counters *, vc_create_counters, "counters", NULL,
	 struct ibv_context *context, struct ibv_counters_init_attr *attr)
VC_UNSUP(int, vc_destroy_counters, "counters", EOPNOTSUPP,
	 struct ibv_counters *counters)
VC_UNSUP(int, vc_attach_counters, "counters", EOPNOTSUPP,
	 struct ibv_counters *counters, struct ibv_counter_attach_attr *attr,
	 struct ibv_flow *flow)
VC_UNSUP(int, vc_read_counters, "counters", EOPNOTSUPP,
	 struct ibv_counters *counters, uint64_t *values, uint32_t n,
	 uint32_t flags)
VC_UNSUP(struct ibv_xrcd *, vc_open_xrcd, "XRC domains", NULL,
	 struct ibv_context *context, struct ibv_xrcd_init_attr *attr)
VC_UNSUP(int, vc_close_xrcd, "XRC domains", EOPNOTSUPP,
	 struct ibv_xrcd *xrcd)
VC_UNSUP(struct ibv_qp *, vc_open_qp, "XRC domains (ibv_open_qp)", NULL,
	 struct ibv_context *context, struct ibv_qp_open_attr *attr)
VC_UNSUP(int, vc_modify_cq, "ibv_modify_cq", EOPNOTSUPP,
	 struct ibv_cq *cq, struct ibv_modify_cq_attr *attr)

void vc_set_unsupported_ops(struct verbs_context *v)
{
	v->context.ops.alloc_mw = vc_alloc_mw;
	v->context.ops.dealloc_mw = vc_dealloc_mw;
	v->context.ops.bind_mw = vc_bind_mw;
	v->advise_mr = vc_advise_mr;
	v->alloc_dm = vc_alloc_dm;
	v->free_dm = vc_free_dm;
	v->reg_dm_mr = vc_reg_dm_mr;
	v->ibv_create_flow = vc_create_flow;
	v->ibv_destroy_flow = vc_destroy_flow;
	v->create_flow_action_esp = vc_create_flow_action_esp;
	v->create_wq = vc_create_wq;
	v->modify_wq = vc_modify_wq;
	v->destroy_wq = vc_destroy_wq;
	v->create_rwq_ind_table = vc_create_rwq_ind_table;
	v->destroy_rwq_ind_table = vc_destroy_rwq_ind_table;
	v->create_counters = vc_create_counters;
	v->destroy_counters = vc_destroy_counters;
	v->attach_counters_point_flow = vc_attach_counters;
	v->read_counters = vc_read_counters;
	v->open_xrcd = vc_open_xrcd;
	v->close_xrcd = vc_close_xrcd;
	v->open_qp = vc_open_qp;
	v->modify_cq = vc_modify_cq;
}
