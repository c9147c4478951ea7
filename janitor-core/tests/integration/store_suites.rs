//! The seven store suites on the memory stores (six store traits and the family): one test per case.

mod visitor_store {
    use janitor_core::MemoryVisitorStore;

    janitor_core::visitor_store_tests!(fresh: |retention| async move { MemoryVisitorStore::new(retention) });
}

mod quota_store {
    use janitor_core::protection::quota::MemoryQuotaStore;

    janitor_core::quota_store_tests!(fresh: |()| async { MemoryQuotaStore::new() });
}

mod budget_store {
    use janitor_core::protection::budget::MemoryBudgetStore;

    janitor_core::budget_store_tests!(fresh: |()| async { MemoryBudgetStore::new() });
}

mod evidence_store {
    use janitor_core::evidence::MemoryEvidenceStore;

    janitor_core::evidence_store_tests!(fresh: |_visitors| async { MemoryEvidenceStore::new() });
}

mod family {
    use janitor_core::evidence::{EventInput, EventType, Evidence, EvidenceConfig};
    use janitor_core::testing::{label_key, visitor, T0};
    use janitor_core::{MemoryStores, Retention, Stores, VisitorStore};

    #[tokio::test]
    async fn every_handle_is_the_same_store() {
        let stores = MemoryStores::new();
        let key = label_key("family");
        let recorder = Evidence::new(stores.evidence(), key.clone(), EvidenceConfig::default())
            .with_clock(janitor_core::Clock::manual(T0));
        let event = EventInput::builder("evt-1", EventType::LoginFailure)
            .subject(recorder.subject_id("account-1"))
            .visitor(visitor(1))
            .build()
            .unwrap();
        assert!(recorder.at(T0).record(&event).await.unwrap().recorded);
        // A second handle, asked for later, holds the event the first one recorded.
        assert_eq!(stores.evidence().event_count(), 1);
        stores
            .visitors(Retention::default())
            .create_visitor(&visitor(1), T0)
            .await
            .unwrap();
        assert_eq!(
            stores
                .visitors(Retention::new(1, 1).unwrap())
                .visitor_count(),
            1
        );
        // Erasure reaches the visitor and its evidence through the family: the event is about an account, so it
        // stays, without the browser.
        assert!(stores.erase_visitor(&visitor(1)).await.unwrap());
        assert_eq!(stores.evidence().event_count(), 1);
        assert_eq!(stores.visitors(Retention::default()).visitor_count(), 0);
    }
}

mod stores {
    use janitor_core::MemoryStores;

    janitor_core::stores_tests!(fresh: |()| async { MemoryStores::new() });
}

mod directory_store {
    use janitor_core::directory::MemoryDirectoryStore;

    janitor_core::directory_store_tests!(fresh: |()| async { MemoryDirectoryStore::new() });
}

mod directory_family {
    use janitor_core::directory::{Directory, SubjectKind};
    use janitor_core::evidence::{EventInput, EventType, Evidence, EvidenceConfig};
    use janitor_core::testing::{label_key, T0};
    use janitor_core::{MemoryStores, Stores};

    #[tokio::test]
    async fn forgetting_a_user_erases_its_evidence_too() {
        let stores = MemoryStores::new();
        let key = label_key("family");
        let evidence = Evidence::new(stores.evidence(), key.clone(), EvidenceConfig::default())
            .with_clock(janitor_core::Clock::manual(T0));
        let directory = Directory::new(stores.directory(), key);
        let subject = directory.subject_id("account-1").unwrap();
        let event = EventInput::builder("evt-1", EventType::LoginFailure)
            .subject(subject.clone())
            .build()
            .unwrap();
        assert!(evidence.at(T0).record(&event).await.unwrap().recorded);
        // The event made the subject row; the directory sees it, with the kind events give.
        let record = directory.subject(&subject).await.unwrap().unwrap();
        assert_eq!(record.kind, SubjectKind::Person);
        assert!(directory.forget_user("account-1").await.unwrap());
        assert_eq!(stores.evidence().event_count(), 0);
        assert!(directory.subject(&subject).await.unwrap().is_none());
    }
}

mod learning_store {
    use janitor_core::learning::MemoryLearningStore;

    janitor_core::learning_store_tests!(fresh: |()| async { MemoryLearningStore::new() });
}

/// The same suites through the family as an application's handle holds it (every store behind an
/// `Arc<dyn …>`, each call's future boxed): the erasure forwards every method, a default or overridden one alike.
mod erased {
    use janitor_core::{ErasedStores, MemoryStores};

    fn family() -> ErasedStores {
        ErasedStores::new(MemoryStores::new())
    }

    mod visitor_store {
        use janitor_core::Stores;

        janitor_core::visitor_store_tests!(fresh: |retention| async move { super::family().visitors(retention) });
    }
    mod quota_store {
        use janitor_core::Stores;

        janitor_core::quota_store_tests!(fresh: |()| async { super::family().quotas() });
    }
    mod budget_store {
        use janitor_core::Stores;

        janitor_core::budget_store_tests!(fresh: |()| async { super::family().budget() });
    }
    mod evidence_store {
        use janitor_core::Stores;

        janitor_core::evidence_store_tests!(fresh: |_visitors| async { super::family().evidence() });
    }
    mod directory_store {
        use janitor_core::Stores;

        janitor_core::directory_store_tests!(fresh: |()| async { super::family().directory() });
    }
    mod learning_store {
        use janitor_core::Stores;

        janitor_core::learning_store_tests!(fresh: |()| async { super::family().learning() });
    }
    mod stores {
        janitor_core::stores_tests!(fresh: |()| async { super::family() });
    }
}
