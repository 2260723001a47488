// Package v1alpha1 stands in for kpt's rollouts API (github.com/kptdev/kpt/rollouts),
// which the Go module proxy does not serve. It declares only what kpt's
// `kpt alpha rollouts` commands refer to, so that kpt compiles; AddToScheme fails, so
// those commands report that they are unavailable instead of talking to a cluster.
// Nothing else in kpt (fn, pkg, live) uses this package.
package v1alpha1

import (
	"errors"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// ErrUnavailable is what AddToScheme returns.
var ErrUnavailable = errors.New("kpt alpha rollouts is not available in this kpt build " +
	"(built without the rollouts API module, which the Go module proxy does not serve)")

// AddToScheme always fails with ErrUnavailable.
func AddToScheme(*runtime.Scheme) error { return ErrUnavailable }

type StrategyType string

const Progressive StrategyType = "Progressive"

type PauseAfterWave struct {
	WaveName string `json:"waveName,omitempty"`
}

type StrategyProgressive struct {
	PauseAfterWave PauseAfterWave `json:"pauseAfterWave,omitempty"`
}

type RolloutStrategy struct {
	Type        StrategyType         `json:"type"`
	Progressive *StrategyProgressive `json:"progressive,omitempty"`
}

type RolloutSpec struct {
	Strategy RolloutStrategy `json:"strategy"`
}

type PackageStatus struct {
	PackageID  string `json:"packageId"`
	SyncStatus string `json:"syncStatus"`
	Status     string `json:"status"`
}

type ClusterStatus struct {
	Name          string        `json:"name"`
	PackageStatus PackageStatus `json:"packageStatus"`
}

type WaveStatus struct {
	Name            string          `json:"name"`
	ClusterStatuses []ClusterStatus `json:"clusterStatuses,omitempty"`
}

type RolloutStatus struct {
	Overall         string          `json:"overall,omitempty"`
	ClusterStatuses []ClusterStatus `json:"clusterStatuses,omitempty"`
	WaveStatuses    []WaveStatus    `json:"waveStatuses,omitempty"`
}

type Rollout struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              RolloutSpec   `json:"spec,omitempty"`
	Status            RolloutStatus `json:"status,omitempty"`
}

type RolloutList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Rollout `json:"items"`
}

func (in *Rollout) DeepCopyObject() runtime.Object {
	out := *in
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	if in.Spec.Strategy.Progressive != nil {
		p := *in.Spec.Strategy.Progressive
		out.Spec.Strategy.Progressive = &p
	}
	out.Status.ClusterStatuses = append([]ClusterStatus(nil), in.Status.ClusterStatuses...)
	out.Status.WaveStatuses = make([]WaveStatus, len(in.Status.WaveStatuses))
	for i, w := range in.Status.WaveStatuses {
		w.ClusterStatuses = append([]ClusterStatus(nil), w.ClusterStatuses...)
		out.Status.WaveStatuses[i] = w
	}
	return &out
}

func (in *RolloutList) DeepCopyObject() runtime.Object {
	out := *in
	in.ListMeta.DeepCopyInto(&out.ListMeta)
	out.Items = make([]Rollout, len(in.Items))
	for i := range in.Items {
		out.Items[i] = *in.Items[i].DeepCopyObject().(*Rollout)
	}
	return &out
}
