package main

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"

	kruisev1alpha1 "github.com/openkruise/kruise/apis/apps/v1alpha1"
	kruisev1beta1 "github.com/openkruise/kruise/apis/apps/v1beta1"
	policyv1alpha1 "github.com/openkruise/kruise/apis/policy/v1alpha1"
	corev1 "k8s.io/api/core/v1"
)

// goTypes renders the table read by crates/kruise-engines/src/revision/go_json.rs: one line per
// Go struct reachable from core/v1 PodTemplateSpec, PersistentVolumeClaim and Pod, sorted by name,
//
//	TypeName: <json tag>=<shape> <json tag>=<shape> ...
//
// with fields in declaration order and embedded `json:",inline"` structs flattened (as
// encoding/json does). Shapes: string, bool, bytes, int32/int64/... (reflect kind names, so
// named string types such as Protocol are "string"), struct:Name, custom:Name (a type with its
// own MarshalJSON: Time, Quantity, IntOrString, FieldsV1), ptr(X), slice(X), map(X) (the map's
// value; keys are always strings here), each followed by `#` and the field's Go type as
// reflect prints it (`*int32`, `v1.PullPolicy`, `[]v1.Container`), which Go's JSON decoding
// errors name.
func goTypes() []byte {
	return typeTable([]reflect.Type{
		reflect.TypeOf(corev1.PodTemplateSpec{}),
		reflect.TypeOf(corev1.PersistentVolumeClaim{}),
		reflect.TypeOf(corev1.Pod{}),
	}, nil)
}

// kruiseTypes renders, in the same format, the OpenKruise v1.9.0 workload types the admission
// webhooks encode (read by go_json.rs beside goTypes' table, for the object a mutating webhook
// answers with): every struct reachable from them that goTypes' table does not already hold.
// Types outside core/v1 and meta/v1 are named <last two package path elements>.<Name>
// (`apps/v1beta1.StatefulSetSpec`), since Kruise's versions reuse type names.
func kruiseTypes() []byte {
	core := map[string]bool{}
	for _, line := range strings.Split(string(goTypes()), "\n") {
		if name, _, ok := strings.Cut(line, ": "); ok {
			core[name] = true
		}
	}
	return typeTable([]reflect.Type{
		reflect.TypeOf(kruisev1alpha1.CloneSet{}),
		reflect.TypeOf(kruisev1alpha1.StatefulSet{}),
		reflect.TypeOf(kruisev1beta1.StatefulSet{}),
		reflect.TypeOf(kruisev1alpha1.DaemonSet{}),
		reflect.TypeOf(kruisev1beta1.DaemonSet{}),
		reflect.TypeOf(kruisev1alpha1.SidecarSet{}),
		reflect.TypeOf(kruisev1beta1.SidecarSet{}),
		reflect.TypeOf(kruisev1alpha1.BroadcastJob{}),
		reflect.TypeOf(kruisev1beta1.BroadcastJob{}),
		reflect.TypeOf(kruisev1alpha1.AdvancedCronJob{}),
		reflect.TypeOf(kruisev1beta1.AdvancedCronJob{}),
		reflect.TypeOf(policyv1alpha1.PodUnavailableBudget{}),
		reflect.TypeOf(kruisev1alpha1.UnitedDeployment{}),
		reflect.TypeOf(kruisev1alpha1.PersistentPodState{}),
		reflect.TypeOf(kruisev1alpha1.ContainerRecreateRequest{}),
		reflect.TypeOf(kruisev1alpha1.PodProbeMarker{}),
	}, core)
}

// typeName is a struct's name in the tables: plain for core/v1 and meta/v1, qualified otherwise.
func typeName(t reflect.Type) string {
	switch t.PkgPath() {
	case "k8s.io/api/core/v1", "k8s.io/apimachinery/pkg/apis/meta/v1":
		return t.Name()
	}
	parts := strings.Split(t.PkgPath(), "/")
	if len(parts) > 2 {
		parts = parts[len(parts)-2:]
	}
	return strings.Join(parts, "/") + "." + t.Name()
}

// typeTable renders every struct reachable from roots, leaving out the names in skip.
func typeTable(roots []reflect.Type, skip map[string]bool) []byte {
	lines := map[string]string{}
	seen := map[string]reflect.Type{}
	var visit func(t reflect.Type)
	visit = func(t reflect.Type) {
		name := typeName(t)
		if prev, done := seen[name]; done {
			if prev != t {
				panic(fmt.Sprintf("two types named %s: %v and %v", name, prev, t))
			}
			return
		}
		seen[name] = t
		var fields []string
		var nested []reflect.Type
		collectFields(t, &fields, &nested)
		if !skip[name] {
			lines[name] = name + ": " + strings.Join(fields, " ")
		}
		for _, n := range nested {
			visit(n)
		}
	}
	for _, r := range roots {
		visit(r)
	}
	names := make([]string, 0, len(lines))
	for n := range lines {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		b.WriteString(lines[n])
		b.WriteByte('\n')
	}
	return []byte(b.String())
}

var marshalerType = reflect.TypeOf((*json.Marshaler)(nil)).Elem()

func isCustom(t reflect.Type) bool {
	return t.Implements(marshalerType) || reflect.PointerTo(t).Implements(marshalerType)
}

func collectFields(t reflect.Type, fields *[]string, nested *[]reflect.Type) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag, hasTag := f.Tag.Lookup("json")
		if tag == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct && !isCustom(f.Type) {
			collectFields(f.Type, fields, nested) // `json:",inline"`: flattened
			continue
		}
		if !hasTag {
			tag = f.Name
		} else if name == "" {
			tag = f.Name + tag
		}
		*fields = append(*fields, tag+"="+shape(f.Type, nested)+"#"+f.Type.String())
	}
}

func shape(t reflect.Type, nested *[]reflect.Type) string {
	if t.Name() != "" && isCustom(t) {
		return "custom:" + t.Name()
	}
	switch t.Kind() {
	case reflect.Pointer:
		return "ptr(" + shape(t.Elem(), nested) + ")"
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return "bytes"
		}
		return "slice(" + shape(t.Elem(), nested) + ")"
	case reflect.Map:
		return "map(" + shape(t.Elem(), nested) + ")"
	case reflect.Struct:
		*nested = append(*nested, t)
		return "struct:" + typeName(t)
	case reflect.Interface:
		panic(fmt.Sprintf("interface field type %v", t))
	default:
		return t.Kind().String()
	}
}
