package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	appsv1alpha1 "github.com/openkruise/kruise/apis/apps/v1alpha1"
	apps "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/kubernetes/pkg/controller/history"
)

// hashCase is one line of inputs/hash_inputs.jsonl and the first column of hash_vectors.tsv.
type hashCase struct {
	CollisionCount *int32 `json:"collisionCount"`
	Data           string `json:"data"`
}

// hash is upstream history.HashControllerRevision over raw revision data.
func hash(data []byte, collisionCount *int32) string {
	cr := &apps.ControllerRevision{Data: runtime.RawExtension{Raw: data}}
	return history.HashControllerRevision(cr, collisionCount)
}

// hashVectors: `<hashCase JSON as written>\t<hash>` per input line.
func hashVectors(inputPath string) ([]byte, error) {
	var out bytes.Buffer
	err := eachLine(inputPath, func(line string) error {
		var c hashCase
		if err := strictUnmarshal([]byte(line), &c); err != nil {
			return err
		}
		fmt.Fprintf(&out, "%s\t%s\n", line, hash([]byte(c.Data), c.CollisionCount))
		return nil
	})
	return out.Bytes(), err
}

// specTemplatePatch is the body OpenKruise v1.9.0 shares between `realControl.getPatch`
// (pkg/controller/cloneset/revision/cloneset_revision.go, with `commonControl.SetRevisionTemplate`
// of pkg/controller/cloneset/core/cloneset_core.go) and `getUnitedDeploymentPatch`
// (pkg/controller/uniteddeployment/revision.go): the object is encoded (for the CloneSet
// runtime.Encode with the legacy JSON codec, which is encoding/json's Encoder underneath;
// apiVersion/kind do not reach the result), decoded into a generic map, and
// {"spec":{"template":<spec.template with "$patch":"replace">}} is encoded with encoding/json.
func specTemplatePatch(obj interface{}) ([]byte, error) {
	str, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var raw map[string]interface{}
	_ = json.Unmarshal(str, &raw)
	objCopy := make(map[string]interface{})
	specCopy := make(map[string]interface{})
	spec := raw["spec"].(map[string]interface{})
	template := spec["template"].(map[string]interface{})

	specCopy["template"] = template
	template["$patch"] = "replace"
	objCopy["spec"] = specCopy
	return json.Marshal(objCopy)
}

// templateVectors: `<pod template JSON as written>\t<revision data>\t<hash, count 0>\t<hash,
// count 3>` per input line.
func templateVectors(inputPath string) ([]byte, error) {
	var out bytes.Buffer
	zero, three := int32(0), int32(3)
	err := eachLine(inputPath, func(line string) error {
		var tpl corev1.PodTemplateSpec
		if err := strictUnmarshal([]byte(line), &tpl); err != nil {
			return err
		}
		cs := &appsv1alpha1.CloneSet{Spec: appsv1alpha1.CloneSetSpec{Template: tpl}}
		data, err := specTemplatePatch(cs)
		if err != nil {
			return err
		}
		fmt.Fprintf(&out, "%s\t%s\t%s\t%s\n", line, data, hash(data, &zero), hash(data, &three))
		return nil
	})
	return out.Bytes(), err
}

// eachLine calls f for each non-empty line of path that is not a `#` comment.
func eachLine(path string, f func(string) error) error {
	file, err := os.Open(path)
	if err != nil {
		return err
	}
	defer file.Close()
	sc := bufio.NewScanner(file)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if err := f(line); err != nil {
			return fmt.Errorf("%s:%d: %w", path, n, err)
		}
	}
	return sc.Err()
}

// strictUnmarshal rejects unknown fields, so a typo in an input does not silently vanish.
func strictUnmarshal(b []byte, v interface{}) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// unitedDeploymentVectors: `<subset template JSON as written>\t<revision data>\t<hash, count
// 0>\t<hash, count 3>` per input line.
func unitedDeploymentVectors(inputPath string) ([]byte, error) {
	var out bytes.Buffer
	zero, three := int32(0), int32(3)
	err := eachLine(inputPath, func(line string) error {
		var tpl appsv1alpha1.SubsetTemplate
		if err := strictUnmarshal([]byte(line), &tpl); err != nil {
			return err
		}
		ud := &appsv1alpha1.UnitedDeployment{Spec: appsv1alpha1.UnitedDeploymentSpec{Template: tpl}}
		data, err := specTemplatePatch(ud)
		if err != nil {
			return err
		}
		fmt.Fprintf(&out, "%s\t%s\t%s\t%s\n", line, data, hash(data, &zero), hash(data, &three))
		return nil
	})
	return out.Bytes(), err
}
