package config

// LoadBytes is Load for a configuration file already read: data is its TOML
// text and name says where it came from (a path, s3://bucket/key or
// ssm:/name), for error messages. Empty data with an empty name means no file.
func LoadBytes(data []byte, name string, env func(string) (string, bool)) (*Config, error) {
	return load(data, name != "" || len(data) > 0, name, env)
}
