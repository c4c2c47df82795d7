from datetime import timedelta

import factory
from django.contrib.auth import get_user_model

from core import clock
from coupons.models import CouponTemplate, UserCoupon
from coupons.shopper_list import published_terms_changed
from orders.models import Order, Product


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()

    username = factory.Sequence(lambda n: f"user{n}")
    password = factory.django.Password("pass-word-123")


class CouponTemplateFactory(factory.django.DjangoModelFactory):
    """A direct coupon, open now for a day either side."""

    class Meta:
        model = CouponTemplate

    name = factory.Sequence(lambda n: f"Coupon {n}")
    type = CouponTemplate.Type.DIRECT
    value = 500
    min_amount = 0
    total = 100
    per_user_limit = 1
    valid_from = factory.LazyFunction(lambda: clock.now() - timedelta(days=1))
    valid_until = factory.LazyFunction(lambda: clock.now() + timedelta(days=1))

    @classmethod
    def _create(cls, model_class, *args, **kwargs):
        """Saved as coupon_template_publish saves: the shopper list is told in its
        transaction."""
        template = super()._create(model_class, *args, **kwargs)
        published_terms_changed()
        return template


class UserCouponFactory(factory.django.DjangoModelFactory):
    """A claimed coupon. Takes the user's next slot and raises its template's claimed_count as
    a real claim would."""

    class Meta:
        model = UserCoupon

    user = factory.SubFactory(UserFactory)
    template = factory.SubFactory(CouponTemplateFactory)
    status = UserCoupon.Status.UNUSED

    @classmethod
    def _create(cls, model_class, *args, **kwargs):
        from django.db.models import F

        template = kwargs["template"]
        CouponTemplate.objects.filter(pk=template.pk).update(claimed_count=F("claimed_count") + 1)
        template.refresh_from_db(fields=["claimed_count"])
        if "valid_from" not in kwargs:  # stamped at issue, as the issuing core does
            window = template.use_window_at(clock.now())
            kwargs["valid_from"], kwargs["valid_until"] = window.valid_from, window.valid_until
        if "slot" not in kwargs:
            held = UserCoupon.objects.filter(template=template, user=kwargs["user"]).count()
            kwargs["slot"] = held + 1
        return super()._create(model_class, *args, **kwargs)


class ProductFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Product

    name = factory.Sequence(lambda n: f"Product {n}")
    price = 9900
    stock = 100


class PaidOrderFactory(factory.django.DjangoModelFactory):
    """A paid order without lines or coupon: what makes its user no longer a new customer."""

    class Meta:
        model = Order

    user = factory.SubFactory(UserFactory)
    status = Order.Status.PAID
    total_amount = 1000
    pay_amount = 1000
    expire_at = factory.LazyFunction(lambda: clock.now() + timedelta(minutes=15))
    paid_at = factory.LazyFunction(clock.now)
