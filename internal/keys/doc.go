// Package keys renders S3 object keys exactly as the upstream Iggy S3 sink does
// ([prefix/]<path_template>/<partition>-<first>-<last>.<ext>) and parses them back.
package keys
