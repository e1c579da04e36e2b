// Package provisioningrequest serves ProvisioningRequests
// (autoscaling.x-k8s.io/v1, the API Cluster Autoscaler serves and Kueue
// writes) of two classes, with pkg/provisioning's rules:
//
//   - check-capacity.autoscaling.x-k8s.io: do all the request's pods fit
//     on the ready nodes now (provisioning.CheckCapacity)? Provisioned, or
//     Failed with the reason; nothing is launched.
//   - best-effort-atomic-scale-up.autoscaling.x-k8s.io: plan room for all
//     the pods or none (provisioning.PlanAtomic), create the planned
//     NodeClaims (the nodeclaim controller launches them), wait until each
//     launched (provisioning.AtomicLaunch); if one does not, delete the
//     whole set and set Failed with the reason.
//
// A Provisioned request's nodes are booked for its pods for the booking
// window (provisioning.BookingWindow, 10 minutes): the cluster state holds
// the booking (state.Cluster.Book) and the disruption planner does not
// disrupt them; then BookingExpired. Status is written per condition
// (statuspatch).
//
// It imports controller-runtime; the rules are pkg/provisioning's.
package provisioningrequest
