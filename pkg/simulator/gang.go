package simulator

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	prv1 "github.com/nodesmith/nodesmith/apis/autoscaling/v1"
)

// gangPoll is how often the simulated Kueue looks at its request.
const gangPoll = time.Second

// gang plays Kueue's ProvisioningRequest admission check for one job: it
// asks for room for the job's Parallelism pods and admits the job (creates
// its pods) only once the request is Provisioned; a Failed request admits
// nothing.
type gang struct {
	job      *job
	admitted bool
	asked    time.Duration
}

func (g *gang) name() types.NamespacedName {
	ns := g.job.spec.Template.Namespace
	if ns == "" {
		ns = "default"
	}
	return types.NamespacedName{Namespace: ns, Name: g.job.spec.Name}
}

// request creates the PodTemplate and the ProvisioningRequest.
func (g *gang) request() {
	s, nn := g.job.s, g.name()
	pt := &corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: nn.Namespace, Name: nn.Name}, Template: *g.job.spec.Template.DeepCopy()}
	if err := s.kube.Create(s.ctx, pt); err != nil {
		s.fail(fmt.Errorf("creating the PodTemplate of gang %s: %w", nn, err))
		return
	}
	pr := &prv1.ProvisioningRequest{ObjectMeta: metav1.ObjectMeta{Namespace: nn.Namespace, Name: nn.Name}, Spec: prv1.ProvisioningRequestSpec{
		ProvisioningClassName: g.job.spec.ProvisioningClassName,
		PodSets:               []prv1.PodSet{{PodTemplateRef: prv1.Reference{Name: nn.Name}, Count: g.job.spec.Parallelism}},
	}}
	if err := s.kube.Create(s.ctx, pr); err != nil {
		s.fail(fmt.Errorf("creating the ProvisioningRequest of gang %s: %w", nn, err))
		return
	}
	g.asked = s.now
	s.note("gang %s asks for room for %d pods (%s)", nn.Name, g.job.spec.Parallelism, g.job.spec.ProvisioningClassName)
	s.after(gangPoll, g.check)
}

// check admits the job once its request is Provisioned.
func (g *gang) check() {
	s, nn := g.job.s, g.name()
	pr := &prv1.ProvisioningRequest{}
	if err := s.kube.Get(s.ctx, nn, pr); err != nil {
		s.fail(fmt.Errorf("reading the ProvisioningRequest of gang %s: %w", nn, err))
		return
	}
	if c := meta.FindStatusCondition(pr.Status.Conditions, prv1.ConditionFailed); c != nil && c.Status == metav1.ConditionTrue {
		s.note("gang %s not admitted after %s: %s: %s", nn.Name, s.now-g.asked, c.Reason, c.Message)
		return
	}
	if c := meta.FindStatusCondition(pr.Status.Conditions, prv1.ConditionProvisioned); c != nil && c.Status == metav1.ConditionTrue {
		g.admitted = true
		s.note("gang %s admitted after %s: %s", nn.Name, s.now-g.asked, c.Message)
		g.job.fill()
		return
	}
	s.after(gangPoll, g.check)
}

// template is the job's pod template; a gang's pods name the request
// whose room they take, as Kueue marks them.
func (j *job) template() *corev1.PodTemplateSpec {
	if j.gang == nil {
		return &j.spec.Template
	}
	t := j.spec.Template.DeepCopy()
	if t.Annotations == nil {
		t.Annotations = map[string]string{}
	}
	t.Annotations[prv1.AnnotationConsumeRequest] = j.spec.Name
	return t
}
