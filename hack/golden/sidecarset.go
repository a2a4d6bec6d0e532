package main

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/openkruise/kruise/apis/apps/defaults"
	appsv1alpha1 "github.com/openkruise/kruise/apis/apps/v1alpha1"
	appsv1beta1 "github.com/openkruise/kruise/apis/apps/v1beta1"
	"github.com/openkruise/kruise/pkg/control/sidecarcontrol"
)

// sidecarSetHashVectors: for each SidecarSet of inputs/sidecarset_hash_inputs.jsonl (its
// apiVersion picks the Go type, apps.kruise.io/v1alpha1 or v1beta1), one line
//
//	<object JSON as written> TAB <hash> TAB <hash without image> TAB <hash after defaults> TAB <hash without image after defaults>
//
// The first two columns are OpenKruise v1.9.0's own sidecarcontrol.SidecarSetHash[V1beta1] and
// SidecarSetHashWithoutImage[V1beta1] of the object json.Unmarshal gives; the last two are the
// annotations OpenKruise's mutating webhook writes (defaults.SetDefaultsSidecarSet[V1beta1],
// then defaults.SetHashSidecarSet[V1beta1]).
func sidecarSetHashVectors(inputPath string) ([]byte, error) {
	var out bytes.Buffer
	err := eachLine(inputPath, func(line string) error {
		var probe struct {
			APIVersion string `json:"apiVersion"`
		}
		if err := json.Unmarshal([]byte(line), &probe); err != nil {
			return err
		}
		var cols [4]string
		switch probe.APIVersion {
		case "apps.kruise.io/v1alpha1":
			obj := &appsv1alpha1.SidecarSet{}
			if err := strictUnmarshal([]byte(line), obj); err != nil {
				return err
			}
			h, err := sidecarcontrol.SidecarSetHash(obj)
			if err != nil {
				return err
			}
			w, err := sidecarcontrol.SidecarSetHashWithoutImage(obj)
			if err != nil {
				return err
			}
			d := obj.DeepCopy()
			defaults.SetDefaultsSidecarSet(d)
			if err := defaults.SetHashSidecarSet(d); err != nil {
				return err
			}
			cols = [4]string{h, w, d.Annotations[sidecarcontrol.SidecarSetHashAnnotation], d.Annotations[sidecarcontrol.SidecarSetHashWithoutImageAnnotation]}
		case "apps.kruise.io/v1beta1":
			obj := &appsv1beta1.SidecarSet{}
			if err := strictUnmarshal([]byte(line), obj); err != nil {
				return err
			}
			h, err := sidecarcontrol.SidecarSetHashV1beta1(obj)
			if err != nil {
				return err
			}
			w, err := sidecarcontrol.SidecarSetHashWithoutImageV1beta1(obj)
			if err != nil {
				return err
			}
			d := obj.DeepCopy()
			defaults.SetDefaultsSidecarSetV1beta1(d)
			if err := defaults.SetHashSidecarSetV1beta1(d); err != nil {
				return err
			}
			cols = [4]string{h, w, d.Annotations[sidecarcontrol.SidecarSetHashAnnotation], d.Annotations[sidecarcontrol.SidecarSetHashWithoutImageAnnotation]}
		default:
			return fmt.Errorf("apiVersion %q is neither apps.kruise.io/v1alpha1 nor apps.kruise.io/v1beta1", probe.APIVersion)
		}
		fmt.Fprintf(&out, "%s\t%s\t%s\t%s\t%s\n", line, cols[0], cols[1], cols[2], cols[3])
		return nil
	})
	return out.Bytes(), err
}
