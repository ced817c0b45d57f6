//! `[providers.X]`: a credential written into a provider's URL is refused, and never repeated.

use super::*;

#[test]
fn a_credential_in_a_providers_url_is_refused_without_repeating_it() {
    let shipped = "base_url = \"http://127.0.0.1:8081/content/v1\"";
    for url in [
        "http://127.0.0.1:8081/content/v1?apikey=SECRET",
        "http://user:SECRET@127.0.0.1:8081/content/v1",
        "http://SECRET@127.0.0.1:8081/content/v1",
        "http://user:SECRET@127.0.0.1:bad/content/v1",
    ] {
        let errors = MapFiles::defaults()
            .edit("faregate.toml", shipped, &format!("base_url = \"{url}\""))
            .load()
            .err()
            .unwrap_or_else(|| panic!("{url} accepted"))
            .to_string();
        assert!(!errors.contains("SECRET"), "{url}: {errors}");
        assert!(
            errors.contains("providers.hotel_content.base_url"),
            "{url}: {errors}"
        );
        assert!(errors.contains("environment variable"), "{url}: {errors}");
    }
}
