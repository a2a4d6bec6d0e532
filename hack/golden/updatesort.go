package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand"

	appspub "github.com/openkruise/kruise/apis/apps/pub"
	appsv1beta1 "github.com/openkruise/kruise/apis/apps/v1beta1"
	"github.com/openkruise/kruise/pkg/util/updatesort"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// sortCase is the first column of go_sort_vectors.tsv (read by the Rust test
// `priority_and_scatter_match_openkruise_go`): pod labels, the number of pods waiting for update
// (indexes 0..wait), and the optional strategies. Pointers to slices keep an empty list
// (`"weightPriority":[]`, `"scatter":[]`) apart from an absent one.
type sortCase struct {
	Labels   []map[string]string                `json:"labels"`
	Wait     int                                `json:"wait"`
	Priority *priorityJSON                      `json:"priority,omitempty"`
	Scatter  *appsv1beta1.UpdateScatterStrategy `json:"scatter,omitempty"`
}

type priorityJSON struct {
	OrderPriority  *[]appspub.UpdatePriorityOrderTerm  `json:"orderPriority,omitempty"`
	WeightPriority *[]appspub.UpdatePriorityWeightTerm `json:"weightPriority,omitempty"`
}

const sortSeed = 20190601
const sortCases = 250

var (
	sortKeys   = []string{"a", "b", "c"}
	sortValues = []string{"", "x", "y", "7", "p-1", "p-12", "sts-3", "q10z"}
	selValues  = []string{"", "x", "y"}
	operators  = []metav1.LabelSelectorOperator{
		metav1.LabelSelectorOpIn, metav1.LabelSelectorOpNotIn,
		metav1.LabelSelectorOpExists, metav1.LabelSelectorOpDoesNotExist,
	}
)

// sortVectors runs seeded random cases through OpenKruise's own updatesort sorters
// (NewPrioritySorter = prioritySort, NewScatterSorter = scatterSort) in the order the CloneSet
// update path applies them, and writes `<sortCase JSON>\t<sorted indexes JSON>` per case.
func sortVectors() ([]byte, error) {
	r := rand.New(rand.NewSource(sortSeed))
	var out bytes.Buffer
	for i := 0; i < sortCases; i++ {
		c := randomSortCase(r)
		pods := make([]*corev1.Pod, len(c.Labels))
		for j, l := range c.Labels {
			pods[j] = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: l}}
		}
		idx := make([]int, c.Wait)
		for j := range idx {
			idx[j] = j
		}
		if c.Priority != nil {
			s := &appspub.UpdatePriorityStrategy{}
			if c.Priority.OrderPriority != nil {
				s.OrderPriority = *c.Priority.OrderPriority
			}
			if c.Priority.WeightPriority != nil {
				s.WeightPriority = *c.Priority.WeightPriority
			}
			idx = updatesort.NewPrioritySorter(s).Sort(pods, idx)
		}
		if c.Scatter != nil {
			idx = updatesort.NewScatterSorter(*c.Scatter).Sort(pods, idx)
		}
		in, err := json.Marshal(c)
		if err != nil {
			return nil, err
		}
		want, err := json.Marshal(idx)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(&out, "%s\t%s\n", in, want)
	}
	return out.Bytes(), nil
}

func randomSortCase(r *rand.Rand) sortCase {
	n := r.Intn(15)
	c := sortCase{Labels: make([]map[string]string, n)}
	for i := range c.Labels {
		l := map[string]string{}
		for _, k := range sortKeys {
			if r.Intn(2) == 0 {
				l[k] = sortValues[r.Intn(len(sortValues))]
			}
		}
		c.Labels[i] = l
	}
	c.Wait = r.Intn(n + 1)
	switch r.Intn(3) {
	case 1:
		terms := make([]appspub.UpdatePriorityWeightTerm, r.Intn(4))
		for i := range terms {
			terms[i] = appspub.UpdatePriorityWeightTerm{
				Weight:        int32(1 + r.Intn(100)),
				MatchSelector: randomSelector(r),
			}
		}
		c.Priority = &priorityJSON{WeightPriority: &terms}
	case 2:
		perm := r.Perm(len(sortKeys))
		terms := make([]appspub.UpdatePriorityOrderTerm, r.Intn(len(sortKeys)+1))
		for i := range terms {
			terms[i] = appspub.UpdatePriorityOrderTerm{OrderedKey: sortKeys[perm[i]]}
		}
		c.Priority = &priorityJSON{OrderPriority: &terms}
	}
	// 30% no scatter strategy, 10% an empty one, 60% one to three terms.
	if k := r.Intn(10); k >= 3 {
		s := make(appsv1beta1.UpdateScatterStrategy, 0)
		if k > 3 {
			s = make(appsv1beta1.UpdateScatterStrategy, 1+(k-4)%3)
		}
		for i := range s {
			s[i] = appsv1beta1.UpdateScatterTerm{
				Key:   sortKeys[r.Intn(len(sortKeys))],
				Value: sortValues[r.Intn(len(sortValues))],
			}
		}
		c.Scatter = &s
	}
	return c
}

// randomSelector: empty, one matchLabels pair, or one expression whose values may be invalid for
// its operator (Exists with values): OpenKruise then skips the term, and so must we.
func randomSelector(r *rand.Rand) metav1.LabelSelector {
	switch r.Intn(3) {
	case 1:
		return metav1.LabelSelector{MatchLabels: map[string]string{
			sortKeys[r.Intn(len(sortKeys))]: selValues[r.Intn(len(selValues))],
		}}
	case 2:
		values := make([]string, 1+r.Intn(2))
		for i := range values {
			values[i] = selValues[r.Intn(len(selValues))]
		}
		return metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
			Key:      sortKeys[r.Intn(len(sortKeys))],
			Operator: operators[r.Intn(len(operators))],
			Values:   values,
		}}}
	}
	return metav1.LabelSelector{}
}
