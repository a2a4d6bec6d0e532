package main

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// goTypes renders the table read by crates/kruise-engines/src/revision/go_json.rs: one line per
// Go struct reachable from core/v1 PodTemplateSpec and PersistentVolumeClaim, sorted by name,
//
//	TypeName: <json tag>=<shape> <json tag>=<shape> ...
//
// with fields in declaration order and embedded `json:",inline"` structs flattened (as
// encoding/json does). Shapes: string, bool, bytes, int32/int64/... (reflect kind names, so
// named string types such as Protocol are "string"), struct:Name, custom:Name (a type with its
// own MarshalJSON: Time, Quantity, IntOrString, FieldsV1), ptr(X), slice(X), map(X) (the map's
// value; keys are always strings here).
func goTypes() []byte {
	roots := []reflect.Type{
		reflect.TypeOf(corev1.PodTemplateSpec{}),
		reflect.TypeOf(corev1.PersistentVolumeClaim{}),
	}
	lines := map[string]string{}
	seen := map[string]reflect.Type{}
	var visit func(t reflect.Type)
	visit = func(t reflect.Type) {
		if prev, done := seen[t.Name()]; done {
			if prev != t {
				panic(fmt.Sprintf("two types named %s: %v and %v", t.Name(), prev, t))
			}
			return
		}
		seen[t.Name()] = t
		var fields []string
		var nested []reflect.Type
		collectFields(t, &fields, &nested)
		lines[t.Name()] = t.Name() + ": " + strings.Join(fields, " ")
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
		*fields = append(*fields, tag+"="+shape(f.Type, nested))
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
		return "struct:" + t.Name()
	case reflect.Interface:
		panic(fmt.Sprintf("interface field type %v", t))
	default:
		return t.Kind().String()
	}
}
